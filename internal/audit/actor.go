package audit

import "context"

type actorKey struct{}

// WithActor carries who is acting (a device, the token) in a request's
// context, for the entries the request's work records.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorFrom is the actor WithActor put in ctx, or "".
func ActorFrom(ctx context.Context) string {
	a, _ := ctx.Value(actorKey{}).(string)
	return a
}

// ActorOr is who acts in ctx, or def when it names nobody (a request from
// this machine's own parley, the CLI).
func ActorOr(ctx context.Context, def string) string {
	if a := ActorFrom(ctx); a != "" {
		return a
	}
	return def
}

// ActorToken is a request signed with parley's access token (the CLI, a script).
const ActorToken = "token"

// Log is what records entries: a *Recorder, or nothing.
type Log interface{ Record(Entry) }
