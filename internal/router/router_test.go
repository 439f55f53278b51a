package router

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/internal/testkit/scripted"
)

// The router's own tests: a real router over a temporary SQLite file and the
// scripted agent, in a synctest bubble, so its timers (stop grace, idle
// unload) run in fake time: seconds and minutes of the router's life pass in
// milliseconds, and synctest.Wait says when every goroutine has settled.

const idleTimeout = time.Minute

type rig struct {
	t    *testing.T
	r    *Router
	st   store.Store
	drv  *scripted.Driver
	hub  *fanout.Fanout
	from chat.RouteKey
	dir  string
}

// newRig starts a router on the SQLite file in dir (a fresh one when "").
func newRig(t *testing.T, dir string, mutate func(*Options)) *rig {
	t.Helper()
	return newRigOn(t, dir, nil, mutate)
}

// newRigOn is newRig with the router's store wrapped by wrap (when not nil).
func newRigOn(t *testing.T, dir string, wrap func(store.Store) store.Store, mutate func(*Options)) *rig {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	var st store.Store
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		st = wrap(st)
	}
	drv := &scripted.Driver{}
	opt := Options{
		Agents: []config.Agent{{ID: "echo", Transport: "scripted", Command: "scripted", Roots: []string{dir},
			IdleTimeout: config.Duration{Duration: idleTimeout}}},
		DefaultAgent: "echo",
		Drivers:      map[string]driver.Driver{"scripted": drv},
		StopGrace:    3 * time.Second,
		// An error the router logs is a failed test: a turn moved outside its
		// phases (turn.go), a commit that failed.
		Logger: slog.New(failOnError{t: t}),
	}
	if mutate != nil {
		mutate(&opt)
	}
	h := fanout.New(nil)
	r := New(st, h, opt)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, r: r, st: st, drv: drv, hub: h, from: chat.RouteKey{Channel: "test", Chat: "c1"}, dir: dir}
}

// bubble runs f in a synctest bubble with a fresh rig (its Options changed by
// mutate when not nil), closed when f returns.
func bubble(t *testing.T, mutate func(*Options), f func(t *testing.T, g *rig)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, "", mutate)
		defer g.close()
		f(t, g)
	})
}

// close shuts the router and the store down; every goroutine of the bubble
// must be gone after it.
func (g *rig) close() {
	g.t.Helper()
	if err := g.r.Close(context.Background()); err != nil {
		g.t.Errorf("router close: %v", err)
	}
	if c, ok := g.st.(interface{ Close() error }); ok {
		c.Close()
	}
}

func (g *rig) send(id, text string) (chat.Delivery, chat.ThreadID, error) {
	g.t.Helper()
	return g.r.Send(context.Background(), SendRequest{From: g.from, Message: Message{MessageID: id, Text: text}})
}

// sendOK sends text as message id from the rig's route and returns its
// thread; a refusal fails the test.
func (g *rig) sendOK(id, text string) chat.ThreadID {
	g.t.Helper()
	_, th, err := g.send(id, text)
	if err != nil {
		g.t.Fatal(err)
	}
	return th
}

func (g *rig) thread(id chat.ThreadID) chat.Thread {
	g.t.Helper()
	th, err := g.st.Thread(context.Background(), id)
	if err != nil {
		g.t.Fatal(err)
	}
	return th
}

// log lists the thread's events as "type" or "type:detail" for the ones a
// test checks closely.
func (g *rig) log(id chat.ThreadID) []string {
	g.t.Helper()
	evs, err := g.st.Events(context.Background(), id, 0, 1000)
	if err != nil {
		g.t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		s := ev.Type
		switch ev.Type {
		case chat.TypeDelivery:
			var d chat.Delivery
			ev.Decode(&d)
			s += ":" + d.MessageID + ":" + d.State
		case chat.TypePromptDone:
			var p chat.PromptDone
			ev.Decode(&p)
			s += ":" + p.MessageID + ":" + p.StopReason
		case chat.TypeSessionInfo:
			var p chat.SessionInfo
			ev.Decode(&p)
			s += ":" + p.State
		case chat.TypeTurnStatus:
			var p chat.TurnStatus
			ev.Decode(&p)
			if p.Active {
				s += ":active"
			}
			if p.Stopping {
				s += ":stopping"
			}
		}
		out = append(out, s)
	}
	return out
}

// failOnError fails the test on any record at level Error.
type failOnError struct {
	t     *testing.T
	allow string // the one error a test makes happen (e.g. "commit")
}

func (h failOnError) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h failOnError) Handle(_ context.Context, r slog.Record) error {
	if h.allow == "" || r.Message != h.allow {
		h.t.Errorf("router logged an error: %s", r.Message)
	}
	return nil
}
func (h failOnError) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h failOnError) WithGroup(string) slog.Handler      { return h }

// leftByACrash writes into dir's store what a crash left: the batch (a
// thread with its inputs and cards) and the route showing it; the store is
// closed as a dead process's would be.
// deliveringAfter is how long after its acceptance leftByACrash's message
// went on its way to the agent.
const deliveringAfter = time.Minute

func leftByACrash(t *testing.T, dir string, from chat.RouteKey, b store.Batch) {
	t.Helper()
	ctx := context.Background()
	// A message left delivering has its "delivering" receipt in the log,
	// committed with its state, a while after it was accepted (it waited
	// in the queue): deliveringAfter.
	for _, in := range b.Inputs {
		if in.State != chat.DeliveryDelivering {
			continue
		}
		b.Thread.LastSeq++
		ev, err := chat.NewEvent(b.Thread.ID, chat.Delivery{MessageID: in.MessageID, State: chat.DeliveryDelivering}, in.AcceptedAt.Add(deliveringAfter))
		if err != nil {
			t.Fatal(err)
		}
		ev.Seq = b.Thread.LastSeq
		b.Events = append(b.Events, ev)
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := st.AttachRoute(ctx, from, b.Thread.ID); err != nil {
		t.Fatal(err)
	}
}

func has(log []string, s string) bool { return slices.Contains(log, s) }

// A stop the agent does not honour: the turn ends after limits' stop grace,
// not before, and the session whose state can no longer be trusted is closed.
func TestStopGraceEndsATurnTheAgentWillNotStop(t *testing.T) {
	t.Parallel()
	bubble(t, nil, func(t *testing.T, g *rig) {
		th := g.sendOK("m1", "hang")
		synctest.Wait()
		if !has(g.log(th), "delivery:m1:submitted") {
			t.Fatalf("m1 not submitted: %v", g.log(th))
		}
		start := time.Now()
		if err := g.r.Control(context.Background(), Control{From: g.from, Stop: true}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3*time.Second - time.Millisecond)
		synctest.Wait()
		if l := g.log(th); has(l, "prompt_done:m1:cancelled") || g.drv.Closed() != 0 {
			t.Fatalf("the turn ended before the stop grace was over (%v): %v", time.Since(start), l)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		l := g.log(th)
		if !has(l, "prompt_done:m1:cancelled") || l[len(l)-1] != "turn_status" {
			t.Fatalf("after the stop grace: %v; want prompt_done cancelled and the turn over", l)
		}
		if g.drv.Closed() != 1 || g.thread(th).State != chat.ThreadUnloaded {
			t.Fatalf("session closed %d times, thread %q; want the session closed and the thread unloaded", g.drv.Closed(), g.thread(th).State)
		}
		// The next message resumes the session and runs.
		if _, _, err := g.send("m2", "say again"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if l := g.log(th); !has(l, "prompt_done:m2:end_turn") || len(g.drv.Resumes()) != 1 {
			t.Fatalf("after the forced stop, m2: %v (resumes %v)", l, g.drv.Resumes())
		}
	})
}

// A stop is logged as a stopping turn_status the moment the lane takes it,
// before the agent has said anything: every screen shows "stopping" at once,
// and the turn's end (cancelled) is still the agent's to say, after it.
func TestStopIsShownAtOnceAndTheAgentStillEndsTheTurn(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, text string
		grace      time.Duration // when the turn ends after the stop
	}{
		{"the agent honours it", "stream 1000 100ms", 0},
		{"the agent ignores it", "hang", 3 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			bubble(t, nil, func(t *testing.T, g *rig) {
				th := g.sendOK("m1", c.text)
				synctest.Wait()
				if !has(g.log(th), "delivery:m1:submitted") {
					t.Fatalf("m1 not submitted: %v", g.log(th))
				}
				start := time.Now()
				if err := g.r.Control(context.Background(), Control{From: g.from, Stop: true}); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				l := g.log(th)
				i := slices.Index(l, "turn_status:active:stopping")
				if i < 0 || time.Since(start) != 0 {
					t.Fatalf("no stopping turn_status logged at once (after %v): %v", time.Since(start), l)
				}
				if c.grace > 0 {
					if has(l, "prompt_done:m1:cancelled") {
						t.Fatalf("the turn ended before the agent or the stop grace said so: %v", l)
					}
					// Asked again while stopping: nothing new is said.
					if err := g.r.Control(context.Background(), Control{From: g.from, Stop: true}); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(c.grace)
				synctest.Wait()
				l = g.log(th)
				if j := slices.Index(l, "prompt_done:m1:cancelled"); j < i || l[len(l)-1] != "turn_status" {
					t.Fatalf("want stopping, then prompt_done cancelled, then the turn over: %v", l)
				}
				if n := strings.Count(strings.Join(l, " "), ":stopping"); n != 1 {
					t.Fatalf("%d stopping statuses, want 1: %v", n, l)
				}
			})
		})
	}
}

// An idle session is unloaded after the agent's idle timeout, not before;
// the thread says so and the next message resumes it.
func TestIdleSessionIsUnloadedAfterItsTimeout(t *testing.T) {
	t.Parallel()
	bubble(t, nil, func(t *testing.T, g *rig) {
		th := g.sendOK("m1", "say hi")
		synctest.Wait()
		if l := g.log(th); !has(l, "prompt_done:m1:end_turn") || g.thread(th).State != chat.ThreadIdle {
			t.Fatalf("m1: %v, thread %q", l, g.thread(th).State)
		}
		time.Sleep(idleTimeout - time.Millisecond)
		synctest.Wait()
		if g.drv.Closed() != 0 || has(g.log(th), "session:unloaded") {
			t.Fatalf("unloaded before its idle timeout: %v", g.log(th))
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if g.drv.Closed() != 1 || !has(g.log(th), "session:unloaded") || g.thread(th).State != chat.ThreadUnloaded {
			t.Fatalf("after the idle timeout: closed %d, %v, thread %q", g.drv.Closed(), g.log(th), g.thread(th).State)
		}
		if _, _, err := g.send("m2", "say back"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if l := g.log(th); !has(l, "prompt_done:m2:end_turn") || len(g.drv.Resumes()) != 1 {
			t.Fatalf("m2 after the unload: %v (resumes %v)", l, g.drv.Resumes())
		}
	})
}

// A thread holds at most QueueDepth messages waiting behind its turn; one
// more is refused as busy and nothing of it is kept, so the client's retry is
// a fresh attempt. The queue then drains in order.
func TestBusyQueueRefusesBeyondItsDepth(t *testing.T) {
	t.Parallel()
	bubble(t, func(o *Options) { o.QueueDepth = 2 }, func(t *testing.T, g *rig) {
		th := g.sendOK("m1", "hang")
		synctest.Wait() // m1 reached the agent (a stop before would fail it undelivered)
		for _, id := range []string{"m2", "m3"} {
			if d, _, err := g.send(id, "say "+id); err != nil || d.State != chat.DeliveryQueued {
				t.Fatalf("%s: %+v %v; want queued", id, d, err)
			}
		}
		if _, _, err := g.send("m4", "say m4"); !errors.Is(err, chat.ErrBusy) {
			t.Fatalf("m4: %v; want busy", err)
		}
		if _, err := g.st.Input(context.Background(), g.from, "m4"); !errors.Is(err, chat.ErrNotFound) {
			t.Fatalf("the refused m4 was kept: %v", err)
		}
		// The hung turn is stopped; the agent does not honour it, the grace
		// ends it, and the queue runs in order.
		if err := g.r.Control(context.Background(), Control{From: g.from, Stop: true}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if d, _, err := g.send("m4", "say m4"); err != nil || d.State != chat.DeliveryQueued {
			t.Fatalf("m4 again: %+v %v; want it taken now", d, err)
		}
		synctest.Wait()
		var got []string
		for _, p := range g.drv.Prompts() {
			got = append(got, p.MessageID)
		}
		if !slices.Equal(got, []string{"m1", "m2", "m3", "m4"}) {
			t.Fatalf("prompts %v; want m1..m4 in order", got)
		}
		if l := g.log(th); !has(l, "prompt_done:m4:end_turn") {
			t.Fatalf("log %v", l)
		}
	})
}

// A queued message withdrawn before its turn is never delivered, and says so;
// one whose turn began cannot be withdrawn, nor one withdrawn already.
func TestWithdrawTakesAQueuedMessageBack(t *testing.T) {
	t.Parallel()
	bubble(t, nil, func(t *testing.T, g *rig) {
		th := g.sendOK("m1", "hang")
		synctest.Wait() // m1's turn runs
		for _, id := range []string{"m2", "m3"} {
			if d, _, err := g.send(id, "say "+id); err != nil || d.State != chat.DeliveryQueued {
				t.Fatalf("%s: %+v %v; want queued", id, d, err)
			}
		}
		withdraw := func(id string) error {
			return g.r.Control(context.Background(), Control{From: g.from, Withdraw: &Withdraw{MessageID: id}})
		}
		if err := withdraw("m2"); err != nil {
			t.Fatalf("withdraw m2: %v", err)
		}
		if err := withdraw("m1"); !errors.Is(err, chat.ErrBadInput) || !strings.Contains(err.Error(), "already being delivered") {
			t.Fatalf("withdraw m1 (its turn runs): %v; want it refused as being delivered", err)
		}
		if err := withdraw("m2"); !errors.Is(err, chat.ErrBadInput) {
			t.Fatalf("withdraw m2 again: %v; want it refused", err)
		}
		if err := g.r.Control(context.Background(), Control{From: g.from, Stop: true}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		var got []string
		for _, p := range g.drv.Prompts() {
			got = append(got, p.MessageID)
		}
		if !slices.Equal(got, []string{"m1", "m3"}) {
			t.Fatalf("prompts %v; want m1 then m3: the withdrawn m2 never reaches the agent", got)
		}
		in, err := g.st.Input(context.Background(), g.from, "m2")
		if err != nil || in.State != chat.DeliveryFailed || in.Detail != WithdrawnDetail {
			t.Fatalf("m2 stored as %+v, %v; want failed, withdrawn", in, err)
		}
		if l := g.log(th); !has(l, "delivery:m2:failed") || !has(l, "prompt_done:m3:end_turn") {
			t.Fatalf("log %v", l)
		}
	})
}

// A message id is chosen per route: when two devices on one thread each queue
// an "m2", the device that withdraws takes back its own message only, and the
// other's is delivered.
func TestWithdrawTakesBackOnlyTheRoutesOwnMessage(t *testing.T) {
	t.Parallel()
	bubble(t, nil, func(t *testing.T, g *rig) {
		ctx := context.Background()
		th := g.sendOK("m1", "hang")
		synctest.Wait() // m1's turn runs
		other := chat.RouteKey{Channel: "web", Chat: "other-device"}
		if err := g.r.OpenThread(ctx, other, th); err != nil {
			t.Fatal(err)
		}
		if d, _, err := g.send("m2", "A's message"); err != nil || d.State != chat.DeliveryQueued {
			t.Fatalf("A's m2: %+v %v; want queued", d, err)
		}
		if d, _, err := g.r.Send(ctx, SendRequest{From: other, Message: Message{MessageID: "m2", Text: "B's message"}}); err != nil || d.State != chat.DeliveryQueued {
			t.Fatalf("B's m2: %+v %v; want queued", d, err)
		}
		if err := g.r.Control(ctx, Control{From: other, Withdraw: &Withdraw{MessageID: "m2"}}); err != nil {
			t.Fatalf("B withdraws its m2: %v", err)
		}
		if err := g.r.Control(ctx, Control{From: other, Withdraw: &Withdraw{MessageID: "m1"}}); !errors.Is(err, chat.ErrBadInput) || strings.Contains(err.Error(), "already being delivered") {
			t.Fatalf("B withdraws m1 (A's, in its turn): %v; want refused as not B's queued message", err)
		}
		if err := g.r.Control(ctx, Control{From: g.from, Stop: true}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		var got []string
		for _, p := range g.drv.Prompts() {
			got = append(got, p.MessageID+"="+p.Text)
		}
		if !slices.Equal(got, []string{"m1=hang", "m2=A's message"}) {
			t.Fatalf("prompts %v; want m1 then A's m2: B's withdraw takes back B's m2 only", got)
		}
		if in, err := g.st.Input(ctx, other, "m2"); err != nil || in.State != chat.DeliveryFailed || in.Detail != WithdrawnDetail {
			t.Fatalf("B's m2 stored as %+v, %v; want failed, withdrawn", in, err)
		}
		if in, err := g.st.Input(ctx, g.from, "m2"); err != nil || in.State != chat.DeliverySubmitted {
			t.Fatalf("A's m2 stored as %+v, %v; want submitted", in, err)
		}
	})
}

// What a crash leaves in the store (a turn in flight, a message being
// delivered, one queued, an open card) is settled by the next start: the
// cut-off message, of which the agent keeps no record here, is unknown with
// the reason (never failed, never sent again), the card expires, the queued
// message is delivered.
func TestRecoveryAfterACrash(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		ctx := context.Background()
		from := chat.RouteKey{Channel: "test", Chat: "c1"}
		{
			now := time.Now()
			th := chat.Thread{ID: "t_crash", Agent: "echo", Cwd: dir, State: chat.ThreadWorking, SessionID: "s_old",
				CreatedAt: now, UpdatedAt: now, TurnMessageID: "m1"}
			b := store.Batch{Thread: &th,
				Inputs: []chat.Input{
					{MessageID: "m1", ThreadID: th.ID, From: from, Text: "say one", State: chat.DeliveryDelivering, AcceptedAt: now},
					{MessageID: "m2", ThreadID: th.ID, From: from, Text: "say two", State: chat.DeliveryQueued, AcceptedAt: now},
				},
				Cards: []chat.Card{{ThreadID: th.ID, RequestID: "p1", Kind: chat.CardPermission, State: chat.CardOpen,
					Request: []byte(`{"request_id":"p1"}`), CreatedAt: now}},
			}
			leftByACrash(t, dir, from, b)
		}
		g := newRig(t, dir, nil)
		defer g.close()
		synctest.Wait()
		l := g.log("t_crash")
		for _, want := range []string{"permission_resolved", "delivery:m1:unknown", "delivery:m2:delivering", "prompt_done:m2:end_turn"} {
			if !has(l, want) {
				t.Fatalf("after the restart the log is %v; want %s in it", l, want)
			}
		}
		in, _ := g.st.Input(ctx, from, "m1")
		if in.State != chat.DeliveryUnknown || !strings.Contains(in.Detail, "keeps no log") {
			t.Fatalf("m1 %+v; want unknown with the reason", in)
		}
		if p := g.drv.Prompts(); len(p) != 1 || p[0].MessageID != "m2" {
			t.Fatalf("prompts %v; want m2 only (m1 may have reached the agent: never sent twice)", p)
		}
		if r := g.drv.Resumes(); !slices.Equal(r, []string{"s_old"}) {
			t.Fatalf("resumes %v; want the thread's own session", r)
		}
		cards, _ := g.st.Cards(ctx, "t_crash", chat.CardExpired)
		if len(cards) != 1 {
			t.Fatalf("expired cards %v; want p1", cards)
		}
	})
}

// A message parley was delivering when it was killed gets its receipt from
// the agent's own record at the next start, before anything queued behind it
// goes: submitted (its turn ends with the error) when the record holds it,
// failed only when the record proves the agent never got it, unknown when
// there is no record. A retry with the same id delivers a failed one once and
// never sends a submitted or unknown one again.
func TestRecoveryJudgesACutOffMessageByTheAgentsRecord(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		log   string // the scripted agent's log as the crash left it; "-": none kept
		state string
		sent  []string // prompts after the restart and a retry of m1
	}{
		{"the agent's record holds it", "t_cut m1\n", chat.DeliverySubmitted, []string{"m2"}},
		{"the record proves it never got there", "t_cut m0\n", chat.DeliveryFailed, []string{"m2", "m1"}},
		{"no record", "-", chat.DeliveryUnknown, []string{"m2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := t.TempDir()
				ctx := context.Background()
				from := chat.RouteKey{Channel: "test", Chat: "c1"}
				now := time.Now()
				th := chat.Thread{ID: "t_cut", Agent: "echo", Cwd: dir, State: chat.ThreadWorking, SessionID: "s_old",
					CreatedAt: now, UpdatedAt: now, TurnMessageID: "m1"}
				leftByACrash(t, dir, from, store.Batch{Thread: &th, Inputs: []chat.Input{
					{MessageID: "m1", ThreadID: th.ID, From: from, Text: "say one", State: chat.DeliveryDelivering, AcceptedAt: now},
					{MessageID: "m2", ThreadID: th.ID, From: from, Text: "say two", State: chat.DeliveryQueued, AcceptedAt: now},
				}})
				logFile := ""
				if c.log != "-" {
					logFile = filepath.Join(dir, "deliveries")
					if err := os.WriteFile(logFile, []byte(c.log), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				g := newRig(t, dir, func(o *Options) { o.Drivers["scripted"].(*scripted.Driver).LogFile = logFile })
				defer g.close()
				synctest.Wait()
				l := g.log("t_cut")
				verdict := slices.Index(l, "delivery:m1:"+c.state)
				if verdict < 0 || verdict > slices.Index(l, "delivery:m2:delivering") {
					t.Fatalf("after the restart: %v; want m1 %s before m2 goes", l, c.state)
				}
				if ended := has(l, "prompt_done:m1:error"); ended != (c.state == chat.DeliverySubmitted) {
					t.Fatalf("after the restart: %v; m1's turn ended with the error: %v, want it only when submitted", l, ended)
				}
				if in, _ := g.st.Input(ctx, from, "m1"); in.State != c.state || in.State != chat.DeliverySubmitted && in.Detail == "" {
					t.Fatalf("m1 stored as %+v; want %s, with the reason", in, c.state)
				}
				if g.thread("t_cut").TurnMessageID != "" {
					t.Fatal("the cut-off turn is still open")
				}
				// Only a record made once m1 went on its way is of it: an
				// earlier message with its words ("yes", said while m1
				// waited in the queue) is kept before then.
				if c.log != "-" {
					checked := g.drv.Checked()
					if len(checked) != 1 || !checked[0].At.Equal(now.Add(deliveringAfter)) {
						t.Fatalf("the agent's record was asked about %+v; want m1 since its delivering receipt (%v), not its acceptance", checked, now.Add(deliveringAfter))
					}
				}
				// The dashboard's Retry sends the same id again.
				g.send("m1", "say one")
				synctest.Wait()
				var got []string
				for _, p := range g.drv.Prompts() {
					got = append(got, p.MessageID)
				}
				if !slices.Equal(got, c.sent) {
					t.Fatalf("prompts after the restart and a retry: %v; want %v", got, c.sent)
				}
			})
		})
	}
}

// parley shut down while a message was on its way to the agent (Prompt still
// running): the agent may have it, so it is not failed; it stays delivering
// for the next start, which judges it by the agent's record like a crash's.
func TestShutdownLeavesAnUnprovenDeliveryToTheNextStart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		g := newRig(t, dir, nil)
		th := g.sendOK("m1", "waiting the agent is busy\nsay hi")
		synctest.Wait() // Prompt runs: the text is on its way
		g.close()
		g = newRig(t, dir, nil) // its scripted agent keeps no record: unknown
		defer g.close()
		synctest.Wait()
		l := g.log(th)
		if has(l, "delivery:m1:failed") || !has(l, "delivery:m1:unknown") {
			t.Fatalf("after a shutdown mid-delivery and a start: %v; want m1 unknown, never failed", l)
		}
		if p := g.drv.Prompts(); len(p) != 0 {
			t.Fatalf("prompts after the start: %v; want none (m1 may have reached the agent)", p)
		}
	})
}

// An agent slow to start: the thread says it is starting at once; the first
// message and one sent meanwhile wait queued, saying why, and are delivered
// once it runs; nothing fails for the wait.
func TestMessagesWaitQueuedForASlowStart(t *testing.T) {
	t.Parallel()
	bubble(t, nil, func(t *testing.T, g *rig) {
		g.drv.StartDelay = 40 * time.Second
		th := g.sendOK("m1", "say one")
		if _, _, err := g.send("m2", "say two"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(39 * time.Second)
		synctest.Wait()
		reasons := func() map[string][]string {
			evs, err := g.st.Events(context.Background(), th, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string][]string{}
			for _, ev := range evs {
				if ev.Type == chat.TypeDelivery {
					var d chat.Delivery
					ev.Decode(&d)
					out[d.MessageID] = append(out[d.MessageID], d.State+":"+d.Detail)
				}
			}
			return out
		}
		l := g.log(th)
		if !has(l, "session:starting") || has(l, "session:started") || has(l, "delivery:m1:delivering") {
			t.Fatalf("39 s into a 40 s start: %v; want starting shown, nothing started or delivering", l)
		}
		want := "queued:" + waitsForStart
		for _, id := range []string{"m1", "m2"} {
			if r := reasons()[id]; r[len(r)-1] != want {
				t.Fatalf("%s's receipts %q; want it %q", id, r, want)
			}
		}
		time.Sleep(time.Second)
		synctest.Wait()
		l = g.log(th)
		for _, want := range []string{"session:started", "prompt_done:m1:end_turn", "prompt_done:m2:end_turn"} {
			if !has(l, want) {
				t.Fatalf("after the start: %v; want %s", l, want)
			}
		}
		if has(l, "delivery:m1:failed") || has(l, "delivery:m2:failed") {
			t.Fatalf("a message failed for the wait: %v", l)
		}
	})
}

// parley stopped while a turn's message waited for its agent to start: nothing
// was sent, so after the restart the message is simply delivered, with no
// "stopped during this turn" error and no turn ended for it.
func TestRecoveryOfAMessageThatWaitedForTheStart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		from := chat.RouteKey{Channel: "test", Chat: "c1"}
		{
			now := time.Now()
			th := chat.Thread{ID: "t_wait", Agent: "echo", Cwd: dir, State: chat.ThreadWorking,
				CreatedAt: now, UpdatedAt: now, TurnMessageID: "m1"}
			b := store.Batch{Thread: &th, Inputs: []chat.Input{
				{MessageID: "m1", ThreadID: th.ID, From: from, Text: "say one", State: chat.DeliveryQueued, Detail: waitsForStart, AcceptedAt: now},
			}}
			leftByACrash(t, dir, from, b)
		}
		g := newRig(t, dir, nil)
		defer g.close()
		synctest.Wait()
		l := g.log("t_wait")
		if has(l, "error") || has(l, "prompt_done:m1:error") || !has(l, "prompt_done:m1:end_turn") {
			t.Fatalf("after the restart: %v; want m1 delivered, no error for a turn that never began", l)
		}
	})
}

// A driver's word that a text waits (the tmux driver behind a turn or a menu)
// becomes the lane's queued receipt, for that message only, while the stored
// state stays delivering (a crash then must not send it again); a delivery
// state a driver reports itself is not shown.
func TestReceiptsAreTheLanes(t *testing.T) {
	t.Parallel()
	bubble(t, nil, func(t *testing.T, g *rig) {
		th := g.sendOK("m1", "waiting the agent is working on a turn")
		synctest.Wait() // the agent waits (a second of fake time)
		if in, _ := g.st.Input(context.Background(), g.from, "m1"); in.State != chat.DeliveryDelivering {
			t.Fatalf("while the text waits the stored state is %q; want delivering (a crash must not send it again)", in.State)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		evs, _ := g.st.Events(context.Background(), th, 0, 100)
		var states []string
		for _, ev := range evs {
			if ev.Type == chat.TypeDelivery {
				var d chat.Delivery
				ev.Decode(&d)
				states = append(states, d.State+":"+d.Detail)
			}
		}
		want := []string{"queued:", "queued:" + waitsForStart, "delivering:", "queued:the agent is working on a turn", "submitted:"}
		if !slices.Equal(states, want) {
			t.Fatalf("receipts %q, want %q\n%v", states, want, g.log(th))
		}
		if _, _, err := g.send("m2", "forge"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if l := g.log(th); has(l, "delivery:m2:failed") || !has(l, "delivery:m2:submitted") {
			t.Fatalf("a driver's own receipt was shown: %v", l)
		}
	})
}

// Modes chosen one after the other reach the agent in that order, however long
// each takes to apply: "plan" then "default" ends in default (Claude Code
// answers set_permission_mode at once and applies it a moment later; the
// dashboard saw a quick plan, default end in plan).
func TestModesReachTheAgentInTheOrderChosen(t *testing.T) {
	t.Parallel()
	bubble(t, nil, func(t *testing.T, g *rig) {
		g.drv.ModeDelay = map[string]time.Duration{"plan": 2 * time.Second}
		th := g.sendOK("m1", "say hi")
		synctest.Wait() // the session is live, the turn done
		for _, m := range []string{"plan", "default"} {
			if err := g.r.Control(context.Background(), Control{From: g.from, SetMode: &SetMode{ModeID: m}}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if got := g.thread(th).Mode; got != "default" {
			t.Fatalf("the thread's mode is %q; want default, the one chosen last", got)
		}
	})
}

// A card's state is the lane's: an answer the agent's driver refuses leaves
// no second truth. The card is answered in the thread, so the driver's
// refusal is followed by the lane's dismissal, and the agent goes on instead
// of waiting for an answer the thread shows as given; a blank answer, which
// no agent takes, is refused by the lane before the card closes.
func TestARefusedAnswerLeavesOneTruth(t *testing.T) {
	t.Parallel()
	bubble(t, nil, func(t *testing.T, g *rig) {
		ctx := context.Background()
		th := g.sendOK("m1", "question Colour?|red,blue")
		synctest.Wait()
		open, _ := g.st.Cards(ctx, th, chat.CardOpen)
		if len(open) != 1 {
			t.Fatalf("open cards %v; want the question", open)
		}
		id := open[0].RequestID
		answer := func(text string) error {
			return g.r.Control(ctx, Control{From: g.from, Answer: &QuestionAnswer{RequestID: id,
				Answers: chat.Answers{"Colour?": {Text: text}}}})
		}
		if err := answer("  "); !errors.Is(err, chat.ErrBadInput) {
			t.Fatalf("a blank answer: %v; want bad input", err)
		}
		if open, _ := g.st.Cards(ctx, th, chat.CardOpen); len(open) != 1 {
			t.Fatalf("after a blank answer the card is not open: %v", open)
		}
		if err := answer("unanswerable"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if open, _ := g.st.Cards(ctx, th, chat.CardOpen); len(open) != 0 {
			t.Fatalf("open cards %v after the answer; want none", open)
		}
		evs, _ := g.st.Events(ctx, th, 0, 100)
		var said []string
		for _, ev := range evs {
			switch ev.Type {
			case chat.TypeAgentChunk:
				var c chat.AgentChunk
				ev.Decode(&c)
				said = append(said, c.Text)
			case chat.TypeError:
				var e chat.Error
				ev.Decode(&e)
				said = append(said, "error: "+e.Message)
			}
		}
		if l := g.log(th); !has(l, "prompt_done:m1:end_turn") || !slices.Contains(said, "answer: dismissed") {
			t.Fatalf("the agent still waits for a card the thread shows answered: %v\n%q", l, said)
		}
		// The thread shows what the agent got: the card ends cancelled, with
		// the reason, in the store and as the last word on it in the log.
		cancelled, _ := g.st.Cards(ctx, th, chat.CardCancelled)
		if len(cancelled) != 1 || cancelled[0].RequestID != id {
			t.Fatalf("cancelled cards %+v; want the refused question", cancelled)
		}
		var stored chat.QuestionResolved
		if err := json.Unmarshal(cancelled[0].Resolution, &stored); err != nil || !stored.Cancelled || stored.Answers != nil || !strings.Contains(stored.Reason, "did not take the answer") {
			t.Fatalf("stored resolution %s (%v); want cancelled with the reason, no answer", cancelled[0].Resolution, err)
		}
		var last *chat.QuestionResolved
		for _, ev := range evs {
			if ev.Type == chat.TypeQuestionResolved {
				last = new(chat.QuestionResolved)
				ev.Decode(last)
			}
		}
		if last == nil || !last.Cancelled || last.Reason == "" {
			t.Fatalf("last question_resolved %+v; want cancelled with the reason", last)
		}
		if err := answer("red"); !errors.Is(err, chat.ErrCardClosed) {
			t.Fatalf("a second answer: %v; want the card closed", err)
		}
	})
}

// A person unloads a live, idle agent session: it is listed while live, the
// unload ends it as the idle timer would (the next message resumes it), and
// an unload while a turn runs, or of a thread not loaded, is refused.
func TestUnloadAsked(t *testing.T) {
	t.Parallel()
	bubble(t, nil, func(t *testing.T, g *rig) {
		th := g.sendOK("m1", "say hi")
		synctest.Wait()
		if live := g.r.LiveSessions(); len(live) != 1 || live[0].Thread != th || live[0].Busy {
			t.Fatalf("live once idle: %+v; want the thread, idle", live)
		}
		if err := g.r.Control(context.Background(), Control{From: g.from, Unload: true}); err != nil {
			t.Fatalf("unload: %v", err)
		}
		synctest.Wait()
		if g.drv.Closed() != 1 || !has(g.log(th), "session:unloaded") || g.thread(th).State != chat.ThreadUnloaded || len(g.r.LiveSessions()) != 0 {
			t.Fatalf("after the unload: closed %d, %v, thread %q, live %+v", g.drv.Closed(), g.log(th), g.thread(th).State, g.r.LiveSessions())
		}
		if err := g.r.Control(context.Background(), Control{From: g.from, Unload: true}); !errors.Is(err, chat.ErrBadInput) {
			t.Fatalf("unload of an unloaded thread: %v; want refused", err)
		}
		if _, _, err := g.send("m2", "hang"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if live := g.r.LiveSessions(); len(live) != 1 || !live[0].Busy || len(g.drv.Resumes()) != 1 {
			t.Fatalf("live while a turn runs: %+v (resumes %v); want the thread, busy, resumed", live, g.drv.Resumes())
		}
		if err := g.r.Control(context.Background(), Control{From: g.from, Unload: true}); !errors.Is(err, chat.ErrBadInput) {
			t.Fatalf("unload during a turn: %v; want refused", err)
		}
		if err := g.r.Control(context.Background(), Control{From: g.from, Stop: true}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
	})
}

// Provisional text (agent_draft) is published to the thread's subscribers
// right after the event it follows, never stored; final words in the same
// step supersede it before anyone sees it.
func TestDraftsAreShownNeverStored(t *testing.T) {
	t.Parallel()
	bubble(t, nil, func(t *testing.T, g *rig) {
		sub, _, err := g.r.Subscribe(context.Background(), g.from, 1000)
		if err != nil {
			t.Fatal(err)
		}
		defer g.hub.Unsubscribe(sub)
		// A draft, a second of nothing, the final words; then a draft the
		// final words of the same step overtake.
		th := g.sendOK("m1", "draft early words\npause 1s\ndraft gone\nsay final words")
		synctest.Wait()
		// The agent says the last two one after the other: the lane is held
		// while it does, so both are in its next step, whatever the
		// scheduler does between the two sends.
		var l *lane
		if err := g.r.call(context.Background(), func() (err error) { l, err = g.r.lane(context.Background(), th); return err }); err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		l.ctrl <- func() { <-release }
		time.Sleep(2 * time.Second)
		synctest.Wait()
		close(release)
		synctest.Wait()
		var shown []string
		var last int64
		for _, it := range sub.Take() {
			if it.Switch {
				continue
			}
			if !it.Draft {
				last = it.Seq
				continue
			}
			var d chat.AgentDraft
			if err := it.Event.Decode(&d); err != nil {
				t.Fatal(err)
			}
			if it.Seq != 0 || it.After != last || d.AfterSeq != last {
				t.Fatalf("draft %q: seq %d, after %d/%d; want no seq, after the last event %d", d.Text, it.Seq, it.After, d.AfterSeq, last)
			}
			shown = append(shown, d.Text)
		}
		if !slices.Equal(shown, []string{"early words"}) {
			t.Fatalf("drafts shown %q; want only the one nothing overtook", shown)
		}
		for _, e := range g.log(th) {
			if e == chat.TypeAgentDraft {
				t.Fatalf("a draft in the log: %v", g.log(th))
			}
		}
	})
}

// A draft that only grew since the one published before it is published
// with what it adds (for views that take appends), naming the one it adds to;
// a draft that changed otherwise, or the first after final words, goes whole.
func TestADraftThatGrewIsPublishedAsAnAppend(t *testing.T) {
	t.Parallel()
	bubble(t, nil, func(t *testing.T, g *rig) {
		sub, _, err := g.r.Subscribe(context.Background(), g.from, 1000)
		if err != nil {
			t.Fatal(err)
		}
		defer g.hub.Unsubscribe(sub)
		g.sendOK("m1", "draft The first\npause 1s\ndraft The first line\npause 1s\ndraft The second\npause 1s\n"+
			"say final words\npause 1s\ndraft More\npause 1s\ndraft More words\npause 1s")
		time.Sleep(10 * time.Second)
		synctest.Wait()
		var got []string
		var prev int64
		for _, it := range sub.Take() {
			if !it.Draft {
				continue
			}
			var d chat.AgentDraft
			if err := it.Event.Decode(&d); err != nil || d.ID != it.DraftID || d.ID <= prev || d.Extends != 0 {
				t.Fatalf("draft %+v (item id %d, %v); want a whole draft named after the one before (%d)", d, it.DraftID, err, prev)
			}
			s := d.Text
			if a := it.Append; a != nil {
				var ad chat.AgentDraft
				if err := a.Event.Decode(&ad); err != nil || ad.ID != d.ID || ad.Extends != prev || a.Extends != prev || ad.AfterSeq != d.AfterSeq {
					t.Fatalf("the append of %q: %+v (%v); want draft %d extending %d", d.Text, ad, err, d.ID, prev)
				}
				s += " = +" + ad.Text
			}
			got = append(got, s)
			prev = d.ID
		}
		want := []string{"The first", "The first line = + line", "The second", "More", "More words = + words"}
		if !slices.Equal(got, want) {
			t.Fatalf("drafts published %q; want %q", got, want)
		}
	})
}

// waitingRemote is a machine that takes its time: Send waits until its
// caller gives up.
type waitingRemote struct {
	entered  chan struct{}
	returned chan struct{}
}

func (w *waitingRemote) Owns(id chat.ThreadID) bool { return strings.Contains(string(id), "@") }
func (w *waitingRemote) Local() string              { return "hub" }
func (w *waitingRemote) Thread(context.Context, chat.ThreadID) (chat.Thread, error) {
	return chat.Thread{}, chat.ErrNotFound
}
func (w *waitingRemote) Send(ctx context.Context, _ chat.RouteKey, _ chat.ThreadID, _ Message) (chat.Delivery, chat.ThreadID, error) {
	close(w.entered)
	<-ctx.Done()
	close(w.returned)
	return chat.Delivery{}, "", ctx.Err()
}
func (w *waitingRemote) Control(context.Context, Control) error { return nil }

// A message on its way to another machine when the router closes: Close
// ends its wait and waits for it, so nothing of the router runs after it.
func TestCloseWaitsForAMessageOnItsWayToAnotherMachine(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		w := &waitingRemote{entered: make(chan struct{}), returned: make(chan struct{})}
		g := newRig(t, "", func(o *Options) { o.Remote = w })
		sent := make(chan error, 1)
		go func() {
			_, _, err := g.r.Send(t.Context(), SendRequest{From: g.from, Message: Message{MessageID: "m1", Text: "hi",
				Intent: &Intent{New: &NewIntent{Cwd: g.dir, Node: "b"}}}})
			sent <- err
		}()
		<-w.entered
		g.close()
		select {
		case <-w.returned:
		default:
			t.Fatal("Close returned while the message's send to its machine still ran")
		}
		if err := <-sent; err == nil {
			t.Fatal("a send cut by Close reported no error")
		}
	})
}

// A message another machine could not bring here is recorded in its thread
// as failed, with the reason, never handed to the agent; the same message
// sent again is a retry that is delivered, and a second record of the
// failure changes nothing.
func TestAFailedMessageIsRecordedAndCanBeSentAgain(t *testing.T) {
	t.Parallel()
	bubble(t, nil, func(t *testing.T, g *rig) {
		th := g.sendOK("m1", "say m1")
		synctest.Wait()
		rec := SendRequest{From: g.from, Thread: th, Message: Message{MessageID: "w1", Text: "remember w1"}, Failed: "machine b did not take it within 24h0m0s"}
		d, _, err := g.r.Send(context.Background(), rec)
		if err != nil || d.State != chat.DeliveryFailed || d.Detail != rec.Failed {
			t.Fatalf("record: %+v %v", d, err)
		}
		synctest.Wait()
		if _, _, err := g.r.Send(context.Background(), rec); !errors.Is(err, chat.ErrDuplicate) {
			t.Fatalf("a second record: %v, want a duplicate", err)
		}
		if _, _, err := g.send("w1", "remember w1"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		got := strings.Join(g.log(th), " ")
		if !strings.Contains(got, "user_message delivery:w1:failed delivery:w1:queued") ||
			!strings.Contains(got, "prompt_done:w1:end_turn") || strings.Count(got, "delivery:w1:failed") != 1 {
			t.Fatalf("log: %s", got)
		}
	})
}

// recordingRemote is a machine b that takes every message at once, or
// refuses each with refuse, or holds each until hold is closed.
type recordingRemote struct {
	mu     sync.Mutex
	sent   []Message
	refuse error
	hold   chan struct{}
}

func (w *recordingRemote) Owns(id chat.ThreadID) bool { return strings.HasSuffix(string(id), "@b") }
func (w *recordingRemote) Local() string              { return "hub" }
func (w *recordingRemote) Thread(_ context.Context, id chat.ThreadID) (chat.Thread, error) {
	return chat.Thread{ID: id, Node: "b"}, nil
}
func (w *recordingRemote) Send(_ context.Context, _ chat.RouteKey, id chat.ThreadID, m Message) (chat.Delivery, chat.ThreadID, error) {
	w.mu.Lock()
	w.sent = append(w.sent, m)
	refuse, hold := w.refuse, w.hold
	w.mu.Unlock()
	if refuse != nil {
		return chat.Delivery{}, "", refuse
	}
	if hold != nil {
		<-hold
	}
	if id == "" {
		id = "t_new@b"
	}
	return chat.Delivery{MessageID: m.MessageID, State: chat.DeliveryQueued}, id, nil
}
func (w *recordingRemote) Control(context.Context, Control) error { return nil }

// A first message that is not started there (machine b offline, or not
// answering) leaves the ask for the next: the message sent again starts the
// thread there and never goes to the thread the route showed before the ask.
// One sent while the first is on its way is refused as busy: two first
// messages would make two threads.
func TestANewThreadOnAnotherMachineOutlivesAFailedFirstSend(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		w := &recordingRemote{refuse: errors.New("machine b is offline: a new thread there waits until it is back")}
		g := newRig(t, "", func(o *Options) { o.Remote = w })
		defer g.close()
		ctx := context.Background()
		before := g.sendOK("m0", "say here")
		synctest.Wait()
		if _, err := g.r.NewThread(ctx, g.from, "claude@b", "/b/work"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := g.send("m1", "hello b"); err == nil {
			t.Fatal("the first message to an offline b: accepted, want refused")
		}
		w.mu.Lock()
		w.refuse, w.hold = nil, make(chan struct{})
		hold := w.hold
		w.mu.Unlock()
		type result struct {
			th  chat.ThreadID
			err error
		}
		again := make(chan result, 1)
		go func() {
			_, th, err := g.send("m2", "hello b again")
			again <- result{th, err}
		}()
		synctest.Wait() // m2 is on its way to b
		if _, _, err := g.send("m3", "too soon"); !errors.Is(err, chat.ErrBusy) {
			t.Fatalf("a message while the first is on its way: %v, want busy", err)
		}
		close(hold)
		if r := <-again; r.err != nil || r.th != "t_new@b" {
			t.Fatalf("the message sent again: %q %v, want b's new thread", r.th, r.err)
		}
		w.mu.Lock()
		sent := w.sent
		w.mu.Unlock()
		if len(sent) != 2 || sent[0].MessageID != "m1" || sent[1].MessageID != "m2" ||
			sent[0].Intent == nil || sent[0].Intent.New == nil || sent[1].Intent == nil || sent[1].Intent.New == nil {
			t.Fatalf("sent to b: %+v", sent)
		}
		// The same ask both times, by its id: had b made the thread for m1
		// (its answer lost), m2 would get that thread, not a second one.
		want := NewIntent{Agent: "claude", Cwd: "/b/work", Node: "b", Ask: sent[0].Intent.New.Ask}
		if want.Ask == "" || *sent[1].Intent.New != want {
			t.Fatalf("sent to b: %+v then %+v, want the one ask with its id twice", *sent[0].Intent.New, *sent[1].Intent.New)
		}
		synctest.Wait()
		if got := strings.Join(g.log(before), " "); strings.Contains(got, ":m1") || strings.Contains(got, ":m2") || strings.Contains(got, ":m3") {
			t.Fatalf("the thread shown before the ask got a message meant for b: %s", got)
		}
		if _, th, err := g.send("m4", "next"); err != nil || th != "t_new@b" {
			t.Fatalf("the one after: %q %v, want b's thread", th, err)
		}
	})
}

// A hub restarted between an ask for a thread on another machine and the
// route's next message keeps the ask: that message starts the thread there,
// never in the thread the route showed before. Once started, the ask is
// done, and a second restart does not start another.
func TestANewThreadAskedOnAnotherMachineOutlivesARestart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		w := &recordingRemote{}
		remote := func(o *Options) { o.Remote = w }
		g := newRig(t, "", remote)
		ctx := context.Background()
		before := g.sendOK("m0", "say here")
		synctest.Wait()
		if _, err := g.r.NewThread(ctx, g.from, "claude@b", "/b/work"); err != nil {
			t.Fatal(err)
		}
		asks, err := g.st.RouteAsks(ctx)
		if err != nil || len(asks) != 1 || asks[0].AskID == "" {
			t.Fatalf("the asks kept: %+v %v, want one with its id", asks, err)
		}
		g.close()

		g = newRig(t, g.dir, remote)
		if _, th, err := g.send("m1", "hello b"); err != nil || th != "t_new@b" {
			t.Fatalf("the first message after the restart: %q %v, want b's new thread", th, err)
		}
		g.close()

		g = newRig(t, g.dir, remote)
		defer g.close()
		if _, th, err := g.send("m2", "again"); err != nil || th != "t_new@b" {
			t.Fatalf("after a second restart: %q %v, want b's thread", th, err)
		}
		w.mu.Lock()
		sent := w.sent
		w.mu.Unlock()
		if len(sent) != 2 || sent[0].Intent == nil || sent[0].Intent.New == nil ||
			*sent[0].Intent.New != (NewIntent{Agent: "claude", Cwd: "/b/work", Node: "b", Ask: asks[0].AskID}) || sent[1].Intent != nil {
			t.Fatalf("sent to b: %+v, want the ask kept before the restart, with its id", sent)
		}
		synctest.Wait()
		if got := strings.Join(g.log(before), " "); strings.Contains(got, ":m1") || strings.Contains(got, ":m2") {
			t.Fatalf("the thread shown before the ask got a message meant for b: %s", got)
		}
	})
}

// On a node, a hub's ask (by its id) makes one thread however often it
// comes: a message carrying the same ask again (the hub did not hear the
// first one's answer: it was killed, or gave up waiting) goes to the thread
// the first made, after a restart too. Another ask makes another thread;
// once the thread is deleted, its ask makes a new one.
func TestAHubsAskMakesOneThreadOnTheNode(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, "", nil)
		defer func() { g.close() }()
		ask := func(id, askID string) chat.ThreadID {
			t.Helper()
			_, th, err := g.r.Send(context.Background(), SendRequest{From: g.from, Message: Message{MessageID: id, Text: "say " + id,
				Intent: &Intent{New: &NewIntent{Cwd: g.dir, Ask: askID}}}})
			if err != nil {
				t.Fatalf("%s asking %s: %v", id, askID, err)
			}
			synctest.Wait()
			return th
		}
		first := ask("m1", "ask_1")
		if th := ask("m2", "ask_1"); th != first {
			t.Fatalf("the same ask again: thread %q, want %q (the one it made)", th, first)
		}
		g.close()

		g = newRig(t, g.dir, nil)
		if th := ask("m3", "ask_1"); th != first {
			t.Fatalf("the same ask after a restart: thread %q, want %q", th, first)
		}
		if th := ask("m4", "ask_2"); th == first {
			t.Fatal("another ask went to the first ask's thread")
		}
		if ths, err := g.st.Threads(context.Background()); err != nil || len(ths) != 2 {
			t.Fatalf("threads: %d %v, want one per ask", len(ths), err)
		}
		got := strings.Join(g.log(first), " ")
		for _, id := range []string{"m1", "m2", "m3"} {
			if !strings.Contains(got, "prompt_done:"+id+":end_turn") {
				t.Fatalf("the first ask's thread lacks %s's turn: %s", id, got)
			}
		}
		if err := g.r.DeleteThread(context.Background(), first); err != nil {
			t.Fatal(err)
		}
		if th := ask("m5", "ask_1"); th == first || th == "" {
			t.Fatalf("the ask of a deleted thread: %q, want a new thread", th)
		}
	})
}

// At a hub, a new thread asked for with "agent@node" on another machine
// (an IM chat's /agent claude@b) is made there by the route's next message,
// which carries the intent; the one after goes to that thread. A route that
// switches to another thread first drops the ask; "agent@hub" is this
// machine's; a machine that is no hub refuses "agent@node".
func TestANewThreadOnAnotherMachineStartsWithTheNextMessage(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		w := &recordingRemote{}
		g := newRig(t, "", func(o *Options) { o.Remote = w })
		defer g.close()
		ctx := context.Background()
		if id, err := g.r.NewThread(ctx, g.from, "claude@b", "/b/work"); err != nil || id != "" {
			t.Fatalf("NewThread claude@b: %q %v, want no thread yet", id, err)
		}
		if _, th, err := g.send("m1", "hello b"); err != nil || th != "t_new@b" {
			t.Fatalf("the next message: %q %v", th, err)
		}
		if _, th, err := g.send("m2", "again"); err != nil || th != "t_new@b" {
			t.Fatalf("the one after: %q %v", th, err)
		}
		w.mu.Lock()
		sent := w.sent
		w.mu.Unlock()
		if len(sent) != 2 || sent[0].Intent == nil || sent[0].Intent.New == nil || sent[0].Intent.New.Ask == "" ||
			*sent[0].Intent.New != (NewIntent{Agent: "claude", Cwd: "/b/work", Node: "b", Ask: sent[0].Intent.New.Ask}) || sent[1].Intent != nil {
			t.Fatalf("sent to b: %+v", sent)
		}
		// Asked, then the route switches: the ask is dropped.
		if _, err := g.r.NewThread(ctx, g.from, "claude@b", ""); err != nil {
			t.Fatal(err)
		}
		id, err := g.r.NewThread(ctx, g.from, "echo@hub", g.dir)
		if err != nil || id == "" || strings.Contains(string(id), "@") {
			t.Fatalf("echo@hub: %q %v, want a thread here", id, err)
		}
		if _, th, err := g.send("m3", "say here"); err != nil || th != id {
			t.Fatalf("after the switch: %q %v, want %q", th, err, id)
		}
		synctest.Wait()
		g2 := newRig(t, "", nil)
		defer g2.close()
		if _, err := g2.r.NewThread(ctx, g2.from, "echo@b", ""); !errors.Is(err, chat.ErrBadInput) {
			t.Fatalf("echo@b on a machine that is no hub: %v", err)
		}
	})
}

// slowRemote is a machine b online but slow to answer: once gate is set,
// reading one of its threads waits until gate is closed.
type slowRemote struct {
	recordingRemote
	gate chan struct{}
}

func (w *slowRemote) Thread(ctx context.Context, id chat.ThreadID) (chat.Thread, error) {
	w.mu.Lock()
	gate := w.gate
	w.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return chat.Thread{}, ctx.Err()
		}
	}
	return chat.Thread{ID: id, Node: "b"}, nil
}

// A connection opening a route that shows a thread on a slow machine waits
// for that machine alone: every other route's messages go on meanwhile (the
// router goroutine never waits for another machine).
func TestASlowMachineHoldsOnlyTheConnectionThatReadsIt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		w := &slowRemote{}
		g := newRig(t, "", func(o *Options) { o.Remote = w })
		defer g.close()
		ctx := context.Background()
		onB := chat.RouteKey{Channel: "web", Chat: "on-b"}
		if err := g.r.OpenThread(ctx, onB, "t1@b"); err != nil {
			t.Fatal(err)
		}
		w.mu.Lock()
		w.gate = make(chan struct{})
		w.mu.Unlock()
		type subscribed struct {
			th  *chat.Thread
			err error
		}
		done := make(chan subscribed, 1)
		go func() {
			_, th, err := g.r.Subscribe(ctx, onB, 16)
			done <- subscribed{th, err}
		}()
		synctest.Wait()
		select {
		case s := <-done:
			t.Fatalf("Subscribe returned before machine b answered: %+v", s)
		default:
		}
		// With the router goroutine waiting for machine b, this would never return.
		g.sendOK("m1", "say here")
		close(w.gate)
		s := <-done
		if s.err != nil || s.th == nil || s.th.ID != "t1@b" {
			t.Fatalf("Subscribe once machine b answered: %+v", s)
		}
	})
}
