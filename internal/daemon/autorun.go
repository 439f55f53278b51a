package daemon

import (
	"context"
	"log/slog"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/channel/web"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/remote"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/schedule"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/internal/trigger"
)

// autorun is the work that starts on its own: this machine's schedules
// and triggers, each run sent through the router like a person's message.
type autorun struct {
	schedules *schedule.Runner
	triggers  *trigger.Triggers
}

// At a cluster's hub (hub set) its schedules reach the nodes'; on a node
// (link set) the hub reaches this machine's.
func startAutorun(ctx context.Context, cfg config.Config, st *sqlite.Store, rt *router.Router, hub *remote.Hub, link *cluster.Link,
	trail audit.Log, log *slog.Logger) (*autorun, error) {
	// Refused when added, not at the first run: an agent this machine does
	// not have, a directory outside its roots.
	check := func(agent, cwd string) error {
		_, ag, err := rt.Driver(agent)
		if err != nil {
			return err
		}
		_, err = config.Confine(cwd, ag.Roots)
		return err
	}
	sopt := schedule.Options{Store: st, Send: rt, Check: check, Logger: log.With("part", "schedule"), Machine: cfg.Cluster.Node,
		Audit: trail}
	if hub != nil {
		sopt.Remote = hub.Schedules()
	}
	runner, err := schedule.Start(ctx, sopt)
	if err != nil {
		return nil, err
	}
	if link != nil {
		if err := link.ServeSchedules(runner.Serve); err != nil {
			runner.Close()
			return nil, err
		}
	}
	return &autorun{
		schedules: runner,
		triggers: trigger.New(trigger.Options{Store: st, Send: rt, Check: check, MaxMessage: cfg.Limits.MaxMessageBytes,
			Logger: log.With("part", "trigger"), Audit: trail, Machine: cfg.Cluster.Node}),
	}, nil
}

// handle adds their API: schedules and triggers' management signed-in only,
// a trigger's webhook authenticated by its signature alone.
func (a *autorun) handle(ws *web.Server) {
	a.schedules.Handle(ws.Handle)
	a.triggers.Handle(ws.Handle, ws.HandleOpen)
}

// close stops the schedules before the router closes: a run being sent
// ends first, and none starts after.
func (a *autorun) close() {
	if a != nil {
		a.schedules.Close()
	}
}
