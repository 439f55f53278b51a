package router

import (
	"context"
	"errors"
	"fmt"

	"github.com/parleyhq/parley/internal/chat"
)

// Remote reaches the threads other machines own, on a cluster's hub
// (docs/multi-machine.md). Such a thread has no lane here: its owning
// machine's lane is its only writer, and what is sent to it goes there.
type Remote interface {
	// Owns says whether id names a thread another machine owns.
	Owns(id chat.ThreadID) bool
	// Local is this machine's node name ("" when it has none).
	Local() string
	// Thread reads a remote thread from its machine; it fails when the
	// machine does not answer.
	Thread(ctx context.Context, id chat.ThreadID) (chat.Thread, error)
	// Send hands a message to the remote thread id, or, with id "", to a
	// new thread on m.Intent.New.Node; it returns the thread's id. A
	// message queued for a machine that is away returns its receipt with
	// chat.ErrAway.
	Send(ctx context.Context, from chat.RouteKey, id chat.ThreadID, m Message) (chat.Delivery, chat.ThreadID, error)
	// Control hands a control to its remote thread (c.Thread).
	Control(ctx context.Context, c Control) error
}

// remoteTarget says whether req goes to another machine: to which thread,
// or (thread "") to a new thread on m.Intent.New.Node. A new thread on a
// named node from a machine that is not a hub is refused, never made here.
// Runs on the router goroutine.
func (r *Router) remoteTarget(req SendRequest) (thread chat.ThreadID, ok bool, err error) {
	rm, m := r.opt.Remote, req.Message
	if m.Intent != nil && m.Intent.New != nil && m.Intent.New.Node != "" {
		switch node := m.Intent.New.Node; {
		case rm == nil:
			return "", false, invalid("intent.new.node %q: this parley is not a cluster's hub", node)
		case node == rm.Local():
			return "", false, nil
		}
		return "", true, nil
	}
	if rm == nil || m.Intent != nil {
		return "", false, nil
	}
	id := req.Thread
	if id == "" {
		id = r.routes[req.From]
	}
	if id != "" && rm.Owns(id) {
		return id, true, nil
	}
	return "", false, nil
}

// sendRemote hands req to its machine off the router goroutine, then
// attaches the route to a new remote thread on it. The goroutine is the
// router's (Close waits for it, and its wait for the machine ends with the
// router). Runs on the router goroutine, itself counted in r.wg.
func (r *Router) sendRemote(ctx context.Context, req SendRequest, thread chat.ThreadID, wish *startWish, reply chan<- sendReply) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(r.ctx, cancel)()
		d, id, err := r.opt.Remote.Send(ctx, req.From, thread, req.Message)
		if (err == nil || errors.Is(err, chat.ErrAway)) && thread == "" && id != "" {
			aerr := r.call(ctx, func() error { return r.attach(ctx, req.From, id) })
			if aerr != nil {
				err = fmt.Errorf("router: attach the route to %s: %w", id, aerr)
			}
		}
		if wish != nil {
			// Attached (the wish is gone with it), or not started there: the
			// route's next message starts it (it never goes to the thread
			// the route showed before the ask).
			_ = r.do(func() { wish.sending = false })
		}
		if req.Notify != nil && (err == nil || errors.Is(err, chat.ErrAway)) {
			req.Notify(d)
		}
		reply <- sendReply{delivery: d, thread: id, err: err}
	}()
}

// ShowAgain tells every connection of the routes showing a thread another
// machine owns, one for which back says its machine is back, to show it
// (hub.Reshow): a connection that subscribed while that machine did not
// answer (Subscribe) follows the thread from now on, with no reconnect; one
// that shows it already is left as it is. On the router goroutine, so no
// attach slips between.
func (r *Router) ShowAgain(ctx context.Context, back func(chat.ThreadID) bool) error {
	return r.call(ctx, func() error {
		rm := r.opt.Remote
		if rm == nil {
			return nil
		}
		for route, id := range r.routes {
			if rm.Owns(id) && back(id) {
				r.fanout.Reshow(route, id)
			}
		}
		return nil
	})
}

// startWish is a new thread asked for on another machine (Router.startOn).
type startWish struct {
	intent  NewIntent
	sending bool // a message carrying it is on its way there
}

// startingErr refuses a message sent while the route's new thread on
// another machine is still being started by the one before: as chat.ErrBusy
// (send it again in a moment), in words of its own.
type startingErr string

func (e startingErr) Error() string {
	return fmt.Sprintf("the new thread on machine %s is still being started by the message before; send this one once it has", string(e))
}
func (e startingErr) Unwrap() error { return chat.ErrBusy }
