package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
)

// applied records what a node's input handler was given.
type applied struct {
	mu   sync.Mutex
	ids  []string
	data []string
	got  chan string
}

func newApplied() *applied { return &applied{got: make(chan string, 64)} }

func (a *applied) handler(refuse func(id string) error) InputHandler {
	return func(_ context.Context, id string, data []byte) ([]byte, error) {
		if refuse != nil {
			if err := refuse(id); err != nil {
				return nil, err
			}
		}
		a.mu.Lock()
		a.ids = append(a.ids, id)
		a.data = append(a.data, string(data))
		a.mu.Unlock()
		a.got <- id
		return []byte(`"` + id + `"`), nil
	}
}

func (a *applied) next(t *testing.T) string {
	t.Helper()
	select {
	case id := <-a.got:
		return id
	case <-time.After(30 * time.Second):
		t.Fatal("no input reached the node")
		return ""
	}
}

func (a *applied) all() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.ids...)
}

func dialWith(t *testing.T, data, hub, name string, in InputHandler) *Link {
	t.Helper()
	l, err := Dial(LinkOptions{DataDir: data, Hub: hub, Node: name, Version: "v-test", Heartbeat: testHeartbeat, Inputs: in})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// holdInputs dials node name to hub with a handler that holds each input
// until release: entered names each as it arrives, then apply (nil: none)
// answers it. release may be called more than once, and is called at the
// test's end before the link's Close (which waits for the handler).
func holdInputs(t *testing.T, data, hub, name string, apply InputHandler) (l *Link, entered <-chan string, release func()) {
	t.Helper()
	in, held := make(chan string, 4), make(chan struct{})
	l = dialWith(t, data, hub, name, func(ctx context.Context, id string, b []byte) ([]byte, error) {
		in <- id
		<-held
		if apply == nil {
			return nil, nil
		}
		return apply(ctx, id, b)
	})
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	t.Cleanup(release) // after dialWith's: so it runs first
	waitFor(t, 10*time.Second, "the link up", l.Connected)
	return l, in, release
}

func waitDrained(t *testing.T, h *Hub, node string) {
	t.Helper()
	waitFor(t, 30*time.Second, node+"'s inputs all acked", func() bool {
		n, err := h.Waiting(t.Context(), node)
		return err == nil && n == 0
	})
}

// A node has no JetStream rights at all: JetStream delivers a pulled input to
// whatever reply subject the pull names, unchecked, so a node that could pull
// its own consumer could pour its inputs onto another node's subjects. Its
// inputs come as the hub's requests instead, in order, each once, and a
// publish ack it aims elsewhere (its reply subject) reaches nothing.
func TestANodeHasNoJetStreamRightsAndGetsItsInputsFromTheHub(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	dataA, dataB := join(t, h, "a"), join(t, h, "b")
	ctx := t.Context()
	for i := 1; i <= 3; i++ {
		if err := h.Queue(ctx, "b", "t1", fmt.Sprintf("m%d", i), []byte(fmt.Sprintf("hello %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	// The same id again is the same input.
	if err := h.Queue(ctx, "b", "t1", "m1", []byte("hello 1")); err != nil {
		t.Fatal(err)
	}

	errs := make(chan error, 64)
	a, err := connectAs(t, dataA, h.Addr(), "a", errs)
	if err != nil {
		t.Fatal(err)
	}
	violation := func(subject string) {
		t.Helper()
		for {
			select {
			case err := <-errs:
				if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), `"`+subject+`"`) {
					return
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("NATS did not refuse %s", subject)
			}
		}
	}
	// Pull its own inputs onto b's input subject; pull b's; any JetStream API.
	for _, subj := range []string{
		"$JS.API.CONSUMER.MSG.NEXT." + InputStream("a") + "." + inputConsumer,
		"$JS.API.CONSUMER.MSG.NEXT." + InputStream("b") + "." + inputConsumer,
		"$JS.API.CONSUMER.INFO." + InputStream("a") + "." + inputConsumer,
		"$JS.API.STREAM.PURGE." + InputStream("b"),
		"$JS.API.INFO",
		"$JS.ACK." + InputStream("b") + ".node.1.1.1.1.0",
	} {
		if err := a.PublishRequest(subj, inputSubject("b"), []byte(`{"batch":1}`)); err != nil {
			t.Fatal(err)
		}
		violation(subj)
	}
	// Its own directory key with a reply subject aimed at b's inputs and at
	// the JetStream API: the publish ack lands there without the rights of a
	// client, and changes nothing.
	for _, reply := range []string{inputSubject("b"), "$JS.API.STREAM.PURGE." + InputStream("b")} {
		if err := a.PublishRequest(DirectoryKey("a"), reply, []byte(`{"node":"a"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, err := h.Waiting(ctx, "b"); err != nil || n != 3 {
		t.Fatalf("b's waiting inputs: %d %v, want 3", n, err)
	}

	// b comes online: its three inputs, in order, once each.
	got := newApplied()
	dialWith(t, dataB, h.Addr(), "b", got.handler(nil))
	for i := 1; i <= 3; i++ {
		if id := got.next(t); id != fmt.Sprintf("m%d", i) {
			t.Fatalf("input %d is %q", i, id)
		}
	}
	waitDrained(t, h, "b")
	// A forged publish ack aimed at b's input subject now, while b listens,
	// then one real input: b applies only the real one.
	if err := a.PublishRequest(DirectoryKey("a"), inputSubject("b"), []byte(`{"node":"a"}`)); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := h.Queue(ctx, "b", "t1", "m4", []byte("hello 4")); err != nil {
		t.Fatal(err)
	}
	if id := got.next(t); id != "m4" {
		t.Fatalf("after the forged ack, b applied %q", id)
	}
	waitDrained(t, h, "b")
	if all := got.all(); strings.Join(all, ",") != "m1,m2,m3,m4" || got.data[0] != "hello 1" {
		t.Fatalf("b applied %v %q, want m1..m4 once each", all, got.data)
	}
}

// An input the node refuses, or one that waited longer than the hub allows,
// fails with its reason and leaves the stream; one the node could not apply
// for now comes again and is applied once.
func TestAnInputFailsWithAReasonOrIsAppliedOnce(t *testing.T) {
	t.Parallel()
	type failure struct{ node, id, reason string }
	failed := make(chan failure, 16)
	h, err := StartHub(t.Context(), HubOptions{DataDir: t.TempDir(), Listen: "127.0.0.1:0", InputWait: time.Second,
		InputFailed: func(_ *Hub, f FailedInput) {
			if f.InDoubt {
				f.Reason = "in doubt: " + f.Reason // never: each hand-over here is proven unreached or answered
			}
			failed <- failure{f.Node, f.ID, f.Reason}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	join(t, h, "away")
	dataP := join(t, h, "picky")
	ctx := t.Context()
	nextFailure := func() failure {
		t.Helper()
		select {
		case f := <-failed:
			return f
		case <-time.After(30 * time.Second):
			t.Fatal("no input failed")
			return failure{}
		}
	}

	// Nobody takes it: it fails once it is older than InputWait.
	if err := h.Queue(ctx, "away", "t1", "lost", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if f := nextFailure(); f.node != "away" || f.id != "lost" || f.reason != "machine away did not take it within 1s" {
		t.Fatalf("failure %+v", f)
	}
	waitDrained(t, h, "away")

	got := newApplied()
	var mu sync.Mutex
	tries := map[string]int{}
	dialWith(t, dataP, h.Addr(), "picky", got.handler(func(id string) error {
		mu.Lock()
		defer mu.Unlock()
		tries[id]++
		switch {
		case id == "bad":
			return &Refusal{Reason: "no such thread"}
		case id == "flaky" && tries[id] == 1:
			return errors.New("the store is busy")
		}
		return nil
	}))
	for _, id := range []string{"bad", "flaky", "good"} {
		if err := h.Queue(ctx, "picky", "t1", id, []byte(id)); err != nil {
			t.Fatal(err)
		}
	}
	if f := nextFailure(); f.node != "picky" || f.id != "bad" || f.reason != "no such thread" {
		t.Fatalf("failure %+v", f)
	}
	if a, b := got.next(t), got.next(t); a != "flaky" || b != "good" {
		t.Fatalf("applied %q, %q; want flaky then good", a, b)
	}
	waitDrained(t, h, "picky")
	// Sent again under their ids within the duplicate window: the failed
	// one is its retry and goes in (it was dropped unseen), the applied one
	// stays the same input (applied once).
	for _, id := range []string{"good", "bad"} {
		if err := h.Queue(ctx, "picky", "t1", id, []byte(id)); err != nil {
			t.Fatal(err)
		}
	}
	if a := got.next(t); !strings.HasPrefix(a, "bad~") {
		t.Fatalf("applied %q, want the retry of bad", a)
	}
	waitDrained(t, h, "picky")
	if all := got.all(); len(all) != 3 {
		t.Fatalf("applied %q, want flaky, good and bad's retry, each once", all)
	}
	mu.Lock()
	defer mu.Unlock()
	if tries["flaky"] != 2 || tries["good"] != 1 || tries["bad"] != 1 {
		t.Fatalf("tries %v: want flaky twice, the others once", tries)
	}
	select {
	case f := <-failed:
		t.Fatalf("a second failure: %+v", f)
	default:
	}
}

// A retry of a failed input under its id within the duplicate window goes in
// after a hub restart too. The hub's list of failed ids is gone then, but so
// is the stream's memory of the id: JetStream rebuilds its duplicate window at
// a start from the messages still in the stream, and a failed input left it.
func TestARetryOfAFailedInputGoesInAfterAHubRestart(t *testing.T) {
	failed := make(chan string, 4)
	opts := HubOptions{DataDir: t.TempDir(), Listen: "127.0.0.1:0",
		InputFailed: func(_ *Hub, f FailedInput) { failed <- f.ID }}
	h, err := StartHub(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	data := join(t, h, "picky")
	got := newApplied()
	var tries sync.Map
	refuseFirst := got.handler(func(id string) error {
		if _, again := tries.LoadOrStore(id, true); !again {
			return &Refusal{Reason: "not now"}
		}
		return nil
	})
	l := dialWith(t, data, h.Addr(), "picky", refuseFirst)
	if err := h.Queue(t.Context(), "picky", "t1", "m1", []byte("m1")); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-failed:
		if id != "m1" {
			t.Fatalf("%q failed, want m1", id)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the refused input did not fail")
	}
	waitDrained(t, h, "picky")
	opts.Listen = h.Addr()
	l.Close()
	h.Close()

	h2, err := StartHub(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h2.Close)
	if err := h2.Queue(t.Context(), "picky", "t1", "m1", []byte("m1")); err != nil {
		t.Fatal(err)
	}
	dialWith(t, data, h2.Addr(), "picky", got.handler(nil))
	if id := got.next(t); id != "m1" && !strings.HasPrefix(id, "m1~") {
		t.Fatalf("applied %q, want m1's retry", id)
	}
	waitDrained(t, h2, "picky")
	if all := got.all(); len(all) != 1 {
		t.Fatalf("applied %q, want m1's retry once", all)
	}
}

// A revoke waits for the node's forwarder, which may be busy for a moment
// (here: telling of a failed input); meanwhile the hub's senders, who read
// the nodes for every message, must not wait with it.
func TestARevokeWaitingForItsForwarderHoldsUpNoSender(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	h, err := StartHub(t.Context(), HubOptions{DataDir: t.TempDir(), Listen: "127.0.0.1:0",
		InputFailed: func(*Hub, FailedInput) { close(entered); <-release }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before Close, which waits for the forwarder
	data := join(t, h, "picky")
	join(t, h, "other")
	dialWith(t, data, h.Addr(), "picky", newApplied().handler(func(string) error { return &Refusal{Reason: "no"} }))
	if err := h.Queue(t.Context(), "picky", "t1", "bad", []byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the refused input was not told of")
	}
	revoked := make(chan error, 1)
	go func() { revoked <- h.Revoke(context.Background(), "picky") }()
	// The revoke took effect and now waits for the forwarder: the hub's
	// lock must be free meanwhile.
	waitFor(t, 30*time.Second, "the revoke applied, the hub's lock free", func() bool {
		if !h.mu.TryLock() {
			return false
		}
		defer h.mu.Unlock()
		_, ok := h.reg.find("picky")
		return !ok
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	nodes, err := h.Nodes(ctx)
	if err != nil || len(nodes) != 1 || nodes[0].Name != "other" {
		t.Fatalf("nodes during the revoke: %+v %v", nodes, err)
	}
	select {
	case err := <-revoked:
		t.Fatalf("the revoke returned before its forwarder ended: %v", err)
	default:
	}
	free()
	if err := <-revoked; err != nil {
		t.Fatal(err)
	}
}

// The hub goes away while the node applies an input: the input was never
// acked, so the restarted hub hands it over again, and the node, which
// committed it, answers without applying it twice. Nothing lost, nothing twice.
func TestAnInputInFlightWhenTheHubStopsIsAppliedOnce(t *testing.T) {
	hubData := t.TempDir()
	h, err := StartHub(t.Context(), HubOptions{DataDir: hubData, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	addr := h.Addr()
	data := join(t, h, "n")
	got := newApplied()
	_, entered, release := holdInputs(t, data, addr, "n", got.handler(nil))
	for _, id := range []string{"first", "second"} {
		if err := h.Queue(t.Context(), "n", "t1", id, []byte(id)); err != nil {
			t.Fatal(err)
		}
	}
	if id := <-entered; id != "first" {
		t.Fatalf("first input handed over: %q", id)
	}
	h.Close() // before the node answers: "first" stays unacked on disk
	release()
	if id := got.next(t); id != "first" {
		t.Fatalf("applied %q", id)
	}
	h2 := startHub(t, hubData, addr)
	if id := got.next(t); id != "second" {
		t.Fatalf("after the restart the node applied %q, want second (first once only)", id)
	}
	waitDrained(t, h2, "n")
	if all := got.all(); strings.Join(all, ",") != "first,second" {
		t.Fatalf("applied %v, want first, second once each", all)
	}
	// "first" came again and was answered from the node's memory of it,
	// without reaching the handler: only "second" entered since.
	if n := len(entered); n != 1 {
		t.Fatalf("%d inputs reached the handler after the first, want 1", n)
	}
}

// A sender at the hub that waits for its input gets the node's result, or
// its refusal as the chat error it is (a card answered elsewhere first is
// chat.ErrCardClosed at the hub too), or, from a node that does not take it,
// ErrWaiting while the input stays queued.
func TestARequestGetsTheNodesResultOrItsChatError(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	h, err := StartHub(t.Context(), HubOptions{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	join(t, h, "away")
	data := join(t, h, "n")
	got := newApplied()
	dialWith(t, data, h.Addr(), "n", got.handler(func(id string) error {
		if id == "late-answer" {
			return Refuse(fmt.Errorf("%w: r1 was answered", chat.ErrCardClosed))
		}
		return nil
	}))
	ctx := t.Context()
	res, err := h.Request(ctx, "n", "t1", "hello", []byte("x"), 30*time.Second)
	if err != nil || string(res) != `"hello"` {
		t.Fatalf("request: %q %v", res, err)
	}
	_, err = h.Request(ctx, "n", "t1", "late-answer", []byte("x"), 30*time.Second)
	if !errors.Is(err, chat.ErrCardClosed) || err.Error() != "card is no longer open: r1 was answered" {
		t.Fatalf("refused request: %v, want chat.ErrCardClosed with the node's words", err)
	}
	// A node that is not connected: the sender learns at once (not after
	// its wait) that the input waits.
	short, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err = h.Request(short, "away", "t1", "m1", []byte("x"), time.Hour)
	if !errors.Is(err, ErrWaiting) {
		t.Fatalf("request to an absent node: %v, want %v", err, ErrWaiting)
	}
	// The next one waits behind the first: its sender learns it at once too.
	_, err = h.Request(short, "away", "t1", "m2", []byte("x"), time.Hour)
	if !errors.Is(err, ErrWaiting) {
		t.Fatalf("second request to an absent node: %v, want %v", err, ErrWaiting)
	}
	if n, err := h.Waiting(ctx, "away"); err != nil || n != 2 {
		t.Fatalf("waiting for away: %d %v, want the input kept", n, err)
	}
	// /metrics says how many wait for each node.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	gauge := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "parley_cluster_inputs_waiting" {
			continue
		}
		for _, m := range mf.GetMetric() {
			gauge[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	if gauge["away"] != 2 || gauge["n"] != 0 || len(gauge) != 2 {
		t.Fatalf("parley_cluster_inputs_waiting %v, want away 2, n 0", gauge)
	}
}

// A control (a stop, a card's answer) is right only now: asked of a node that
// is away, it fails at once and is not kept, so the node, back later, applies
// the messages queued for it and never that stop (sent through the queue, as
// before, it was applied on the node's return, on whatever turn ran then).
func TestAnAskedInputIsNeverAppliedLate(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	data := join(t, h, "b")
	ctx := t.Context()
	if _, err := h.Ask(ctx, "b", "stop-1", []byte("stop"), 10*time.Second); err == nil || !strings.Contains(err.Error(), "not connected") {
		t.Fatalf("a stop asked of an away node: %v; want it refused as not connected", err)
	}
	if err := h.Queue(ctx, "b", "t1", "m1", []byte("message")); err != nil {
		t.Fatal(err)
	}
	got := newApplied()
	dialWith(t, data, h.Addr(), "b", got.handler(nil))
	if id := got.next(t); id != "m1" {
		t.Fatalf("first input on return: %s; want the queued message m1", id)
	}
	waitDrained(t, h, "b")
	// Asked while connected, it is applied and answered.
	res, err := h.Ask(ctx, "b", "stop-2", []byte("stop"), 10*time.Second)
	if err != nil || string(res) != `"stop-2"` {
		t.Fatalf("a stop asked of a connected node: %q %v", res, err)
	}
	if all := got.all(); strings.Join(all, ",") != "m1,stop-2" {
		t.Fatalf("the node applied %v; want m1 and stop-2 only: stop-1 was refused, never kept", all)
	}
}

// An asked input that waits on the node behind a slow one until the hub has
// stopped waiting (and told its sender "nothing is kept") is not applied
// when its turn comes: its budget runs from when it reached the node, not
// from when the node got to it (a new thread on b would otherwise start,
// orphaned, with the message its sender was told had failed).
func TestAnAskedInputWaitingBehindASlowOneIsNotAppliedAfterTheHubGaveUp(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	data := join(t, h, "b")
	inSlow, release := make(chan struct{}), make(chan struct{})
	got := newApplied()
	dialWith(t, data, h.Addr(), "b", got.handler(func(id string) error {
		if id == "slow" {
			close(inSlow)
			<-release
		}
		return nil
	}))
	ctx := t.Context()
	waitFor(t, 30*time.Second, "b answering", func() bool {
		_, err := h.Ask(ctx, "b", "hello", []byte("x"), 10*time.Second)
		return err == nil
	})
	slow := make(chan error, 1)
	go func() {
		_, err := h.Ask(ctx, "b", "slow", []byte("x"), 30*time.Second)
		slow <- err
	}()
	<-inSlow
	if _, err := h.Ask(ctx, "b", "late", []byte("x"), time.Second); err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("an input asked behind a slow one: %v, want the hub to give up on it", err)
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatalf("the slow input: %v", err)
	}
	// Answered in order: once "after" is applied, "late" has had its turn.
	if _, err := h.Ask(ctx, "b", "after", []byte("x"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if all := strings.Join(got.all(), ","); all != "hello,slow,after" {
		t.Fatalf("the node applied %s, want hello,slow,after: late was given up on by the hub", all)
	}
}

// A message for a node larger than NATS carries (limits.max_message_bytes
// may be up to 16 MiB, NATS's payload 8 MiB) is refused before it is sent,
// as too large with the bound and what to do, not with NATS's own error;
// nothing is kept for the node. One just under the bound goes.
func TestAnInputLargerThanALinkCarriesIsRefusedAsTooLarge(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	join(t, h, "away")
	data := join(t, h, "n")
	got := newApplied()
	dialWith(t, data, h.Addr(), "n", got.handler(nil))
	ctx := t.Context()
	big := bytes.Repeat([]byte("x"), MaxInput+1)
	for _, send := range []func() error{
		func() error { _, err := h.Request(ctx, "n", "t1", "big", big, 30*time.Second); return err },
		func() error { return h.Queue(ctx, "away", "t1", "big", big) },
		func() error { _, err := h.Ask(ctx, "n", "big-ask", big, 30*time.Second); return err },
	} {
		err := send()
		if !errors.Is(err, chat.ErrTooLarge) || !strings.Contains(err.Error(), "a message to another machine may be") {
			t.Fatalf("a %d-byte input: %v, want chat.ErrTooLarge saying the bound", len(big), err)
		}
	}
	if n, err := h.Waiting(ctx, "away"); err != nil || n != 0 {
		t.Fatalf("waiting for away: %d %v, want nothing kept", n, err)
	}
	if _, err := h.Request(ctx, "n", "t1", "fits", big[:MaxInput], 30*time.Second); err != nil {
		t.Fatalf("an input of %d bytes: %v", MaxInput, err)
	}
	if id := got.next(t); id != "fits" {
		t.Fatalf("the node got %q, want fits", id)
	}
}

// A node's refusal reaches the hub as the same chat error, so the hub's
// screens say what the node's would: a card answer refused because its agent
// is not running leaves the card open there too (agent_error), where a
// card_closed would close it.
func TestARefusalCrossesAsItsChatError(t *testing.T) {
	t.Parallel()
	for _, want := range chatErrors {
		node := fmt.Errorf("at the node: %w", want)
		got := refusalAt(node.Error(), chatErrorCode(node))
		for _, other := range chatErrors {
			if is := errors.Is(got, other); is != (other == want) {
				t.Errorf("%q at the hub: errors.Is(%q) = %v", want, other, is)
			}
		}
		if got.Error() != node.Error() {
			t.Errorf("the hub's words %q, the node's %q", got.Error(), node.Error())
		}
	}
	if !errors.Is(refusalAt("x", chatErrorCode(fmt.Errorf("%w; the card stays open", driver.ErrNotRunning))), driver.ErrNotRunning) {
		t.Error("a card answer refused while the agent is not running lost its error at the hub")
	}
}

// Only a publish JetStream refused (its answer an error: the stream full;
// or no stream at all) says the hub did not keep an input, so that its
// sender is told it failed. A send cut off by its context or a lost ack may
// come after the stream kept it: that is no failure to keep and show (the
// node would apply it too), and the same id sent again finds it.
func TestOnlyARefusedPublishIsAnInputNotKept(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&jetstream.APIError{Code: 503, ErrorCode: 10077, Description: "maximum messages exceeded"}, true},
		{fmt.Errorf("publish: %w", &jetstream.APIError{Code: 503, ErrorCode: jetstream.JSErrCodeStreamMessageExceedsMaximum, Description: "message size exceeds maximum allowed"}), true},
		{jetstream.ErrNoStreamResponse, true},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
		{nats.ErrTimeout, false},
		{nats.ErrConnectionClosed, false},
	} {
		if got := refused(c.err); got != c.want {
			t.Errorf("refused(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	join(t, h, "b")
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // the sender's client went away mid-send
	if err := h.Queue(ctx, "b", "t1", "m1", []byte("hello")); err == nil || errors.Is(err, ErrNotKept) {
		t.Fatalf("a send cut off by its context: %v; want an error that is not ErrNotKept", err)
	}
}

// A machine revoked while it applies an input: the input may have reached
// its agent, so it ends in doubt (its message reads "unknown"), never as
// failed; one queued behind it that was never handed over fails plainly.
func TestARevokeWhileTheNodeAppliesEndsTheInputInDoubt(t *testing.T) {
	t.Parallel()
	ended := make(chan FailedInput, 4)
	h, err := StartHub(t.Context(), HubOptions{DataDir: t.TempDir(), Listen: "127.0.0.1:0",
		InputFailed: func(_ *Hub, f FailedInput) { ended <- f }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	data := join(t, h, "n")
	got := newApplied()
	_, entered, release := holdInputs(t, data, h.Addr(), "n", got.handler(nil))
	for _, id := range []string{"first", "second"} {
		if err := h.Queue(t.Context(), "n", "t1", id, []byte(id)); err != nil {
			t.Fatal(err)
		}
	}
	if id := <-entered; id != "first" {
		t.Fatalf("first input handed over: %q", id)
	}
	if err := h.Revoke(t.Context(), "n"); err != nil {
		t.Fatal(err)
	}
	release()
	if id := got.next(t); id != "first" { // the node applied it: the agent got it
		t.Fatalf("the node applied %q", id)
	}
	byID := map[string]FailedInput{}
	for range 2 {
		select {
		case f := <-ended:
			byID[f.ID] = f
		case <-time.After(30 * time.Second):
			t.Fatalf("ended so far: %+v; want first and second", byID)
		}
	}
	if f := byID["first"]; !f.InDoubt || !strings.Contains(f.Reason, "may have applied it") {
		t.Fatalf("the input the node was applying ended %+v, want in doubt", f)
	}
	if f := byID["second"]; f.InDoubt || !strings.Contains(f.Reason, "revoked") {
		t.Fatalf("the input never handed over ended %+v, want failed as revoked", f)
	}
}

// A node that goes away while it applies an input, and stays away past
// input_wait: the hand-over had no answer, so the input ends in doubt.
func TestAnInputHandedOverToANodeThatWentAwayEndsInDoubt(t *testing.T) {
	t.Parallel()
	ended := make(chan FailedInput, 4)
	h, err := StartHub(t.Context(), HubOptions{DataDir: t.TempDir(), Listen: "127.0.0.1:0", InputWait: time.Second,
		InputFailed: func(_ *Hub, f FailedInput) { ended <- f }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	data := join(t, h, "n")
	l, entered, release := holdInputs(t, data, h.Addr(), "n", nil)
	if err := h.Queue(t.Context(), "n", "t1", "first", []byte("first")); err != nil {
		t.Fatal(err)
	}
	<-entered
	go l.Close()    // waits for the handler, which never answers in time
	defer release() // then lets the handler (and the link's Close) end
	select {
	case f := <-ended:
		if f.ID != "first" || !f.InDoubt || !strings.Contains(f.Reason, "may have reached the agent") {
			t.Fatalf("ended %+v, want first in doubt", f)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the input handed over never ended")
	}
}
