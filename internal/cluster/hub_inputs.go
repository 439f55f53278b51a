package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/parleyhq/parley/internal/backoff"
	"github.com/parleyhq/parley/internal/chat"
)

// The hub's end of the input protocol (inputs.go): each node's stream, the
// forwarder that hands its inputs to the node one at a time, and the
// senders waiting for them (Request, Ask).

// remoteError is a node's refusal at the hub: its words, and the chat error
// it is to errors.Is.
type remoteError struct {
	text string
	err  error
}

func (e *remoteError) Error() string { return e.text }
func (e *remoteError) Unwrap() error { return e.err }

func refusalAt(reason string, code int) error {
	e := &remoteError{text: reason}
	if code > 0 && code <= len(chatErrors) {
		e.err = chatErrors[code-1]
	}
	return e
}

// InputFailed is told of an input that will never be applied: the node
// refused it, or it waited too long for the node.
type InputFailed func(*Hub, FailedInput)

// FailedInput is an input that will never be applied, and why.
type FailedInput struct {
	Node, ID, Reason string
	// Data is the input as it was queued.
	Data []byte
	// Told says a sender waiting for it (Request) got the failure: the
	// person saw it; otherwise the one who sent it has only heard that it
	// waits, and must be told another way.
	Told bool
	// InDoubt says the node may have applied it all the same: it was handed
	// over and no answer proved that it was not (the node went away while
	// applying it, or the hub restarted in between). Its end is "unknown",
	// never "failed": a message the agent got must not read failed.
	InDoubt bool
}

// ErrInDoubt says an input ended at the hub (its machine was revoked, or
// it waited past input_wait) after a hand-over that may have reached its
// node: whether the node applied it is not known.
var ErrInDoubt = errors.New("may have reached its machine")

// ErrNotKept says the hub could not queue an input for its machine (its
// stream is full: 10,000 inputs or input_bytes; or JetStream failed):
// nothing of it waits.
var ErrNotKept = errors.New("the hub could not keep the message")

// ErrWaiting says an input is queued for a node that has not taken it yet.
var ErrWaiting = errors.New("waits for its machine")

// ErrResent says an input was sent before under the same id: the stream
// kept its first copy (within its duplicate window) and dropped this one,
// or the node had applied it already and answered with its first answer.
// Its end goes to the first copy's sender, and its first answer is old: the
// state it reached is to be asked of its node (RemoteSource.Input).
var ErrResent = errors.New("sent before under the same id")

// inputResult is how an input handed over ended, for a sender waiting.
type inputResult struct {
	result []byte
	err    error
	again  bool // the node had applied it before (inputAnswer.Again)
}

// end is the result as Request returns it.
func (r inputResult) end() ([]byte, error) {
	if r.again {
		return nil, ErrResent
	}
	return r.result, r.err
}

// Request queues an input (as Queue) and waits up to wait for the node to
// apply it: its result, or its refusal as an error that is the chat error
// it names. After wait, or at once when the node is not connected, it
// returns ErrWaiting; the input stays queued. An input queued before under
// the same id returns ErrResent at once: its end is told to the sender
// of its first copy (still waiting, or long gone), never to this one, so
// waiting for it would only hold this sender.
func (h *Hub) Request(ctx context.Context, node, thread, id string, data []byte, wait time.Duration) ([]byte, error) {
	ch := make(chan inputResult, 1)
	h.wmu.Lock()
	first := h.waiters[id] == nil // else the first copy's sender waits for it
	if first {
		h.waiters[id] = ch
	}
	h.wmu.Unlock()
	dup, err := h.queue(ctx, node, thread, id, data)
	if err != nil || dup || !first {
		r, ok := h.leave(id, ch)
		switch {
		case err != nil:
			return nil, err
		case ok && r.err != nil:
			return nil, r.err // the first copy failed just now, and this sender was told
		}
		return nil, ErrResent
	}
	if !h.away(node) {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case r := <-ch:
			return r.end()
		case <-t.C:
		case <-ctx.Done():
		}
	}
	if r, ok := h.leave(id, ch); ok {
		return r.end()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w (%s)", ErrWaiting, node)
}

// leave stops a sender's wait for input id, exactly: an end settled before
// it is returned (the sender has it), one after it is not the sender's
// (settle sends under wmu; FailedInput.Told).
func (h *Hub) leave(id string, ch chan inputResult) (inputResult, bool) {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	if h.waiters[id] == ch {
		delete(h.waiters, id)
	}
	select {
	case r := <-ch:
		return r, true
	default:
		return inputResult{}, false
	}
}

// Ask hands an input to node now, past its stream, and waits up to wait for
// the node's answer: for what is right only now (a stop, a card's answer, a
// mode), which a queue could apply hours later on another turn. Nothing is
// kept: a node that is not connected, or does not answer in time, gets no
// copy for later, and the error says so. The node is given wait too, and
// applies nothing after it.
func (h *Hub) Ask(ctx context.Context, node, id string, data []byte, wait time.Duration) ([]byte, error) {
	if err := CheckName(node); err != nil {
		return nil, err
	}
	if id == "" {
		return nil, errors.New("cluster: an input needs an id")
	}
	if err := checkInput(node, data); err != nil {
		return nil, err
	}
	req := nats.NewMsg(inputSubject(node))
	req.Header.Set(jetstream.MsgIDHeader, id)
	req.Header.Set(withinHeader, wait.String())
	req.Data = data
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	ans, err := h.nc.RequestMsgWithContext(ctx, req)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("machine %s is not connected: nothing was sent, nothing is kept for later", node)
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return nil, fmt.Errorf("machine %s did not answer within %v: nothing is kept for later", node, wait)
	case err != nil:
		return nil, err
	}
	var a inputAnswer
	if err := json.Unmarshal(ans.Data, &a); err != nil {
		return nil, fmt.Errorf("machine %s answered with something else: %w", node, err)
	}
	if a.Refused {
		return nil, refusalAt(a.Error, a.Code)
	}
	if a.Error != "" {
		return nil, fmt.Errorf("machine %s: %s", node, a.Error)
	}
	return a.Result, nil
}

// away says whether node did not answer the last hand-over because it is
// not connected (inputs for it wait behind that one).
func (h *Hub) away(node string) bool {
	h.mu.Lock()
	f := h.fwd[node]
	h.mu.Unlock()
	return f != nil && f.away.Load()
}

// settle tells a sender waiting for input id how it ended, and says
// whether one was waiting. The send is under wmu (the channel has room for
// it): a sender that stops waiting either has it or was never told.
func (h *Hub) settle(id string, r inputResult) bool {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	ch := h.waiters[id]
	delete(h.waiters, id)
	if ch != nil {
		ch <- r
	}
	return ch != nil
}

func checkInput(node string, data []byte) error {
	if len(data) <= MaxInput {
		return nil
	}
	return fmt.Errorf("%w: %d bytes as sent to machine %s, more than the %d bytes a message to another machine may be "+
		"(files count 4/3 of their size: about %d bytes of files in all); send it from %s's own dashboard or terminal, or in smaller pieces",
		chat.ErrTooLarge, len(data), node, MaxInput, MaxInput*3/4, node)
}

// Queue puts an input for node's thread into node's stream, under its id:
// a second Queue of the same id within the stream's duplicate window is the
// same input. It returns once the hub's store holds it.
func (h *Hub) Queue(ctx context.Context, node, thread, id string, data []byte) error {
	_, err := h.queue(ctx, node, thread, id, data)
	return err
}

// queue is Queue, saying whether the input was queued before (dup): the
// stream kept its first copy and dropped this one.
func (h *Hub) queue(ctx context.Context, node, thread, id string, data []byte) (dup bool, err error) {
	if err := CheckName(node); err != nil {
		return false, err
	}
	if id == "" || strings.ContainsAny(thread, ".*> \t\r\n") || thread == "" {
		return false, errors.New("cluster: an input needs an id and a thread id that is one subject token")
	}
	if err := checkInput(node, data); err != nil {
		return false, err
	}
	subject := InputSubject(node) + "." + thread
	ack, err := h.js.Publish(ctx, subject, data, jetstream.WithMsgID(id))
	dup = err == nil && ack.Duplicate
	if dup && h.failed.has(id) {
		dup = false
		// The same id failed already (refused, or waited too long): this is
		// its retry, which the duplicate window would drop unseen. It goes
		// in under an id of its own, still known by its first (a sender
		// waits on that; the node checks its own duplicates by message id).
		m := nats.NewMsg(subject)
		m.Data = data
		m.Header.Set(hdrInput, id)
		_, err = h.js.PublishMsg(ctx, m, jetstream.WithMsgID(id+"~"+chat.NewID("retry")))
	}
	if err != nil {
		if refused(err) {
			return false, fmt.Errorf("%w for machine %s: %w", ErrNotKept, node, err)
		}
		// A timeout or a cancelled send may come after JetStream kept it:
		// not failed, and the same id sent again is answered by what it
		// reached (a duplicate, ErrResent).
		return false, fmt.Errorf("cluster: the input for machine %s may not be kept; send it again: %w", node, err)
	}
	return dup, nil
}

// refused reports whether a publish's error proves the stream did not keep
// it: JetStream answered with an error (full: its inputs or bytes), or no
// stream answered at all.
func refused(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

// Waiting is how many inputs wait in node's stream.
func (h *Hub) Waiting(ctx context.Context, node string) (uint64, error) {
	s, err := h.js.Stream(ctx, InputStream(node))
	if err != nil {
		return 0, err
	}
	return s.CachedInfo().State.Msgs, nil
}

// forwarder hands one node's inputs to it, one at a time, in order. It runs
// from the node's join (or the hub's start) to its revocation (or Close).
type forwarder struct {
	h      *Hub
	node   string
	ctx    context.Context // cancelled by close
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex // guards it
	it jetstream.MessagesContext

	// away is set while the node is not connected (its last hand-over had
	// no responder), cleared by its next answer.
	away atomic.Bool

	// unreached counts, by input key, the hand-overs of an input waiting in
	// the stream that are proven not to have reached the node (no
	// responders), from its first; -1 once one may have (inDoubt). Only the
	// forwarder's goroutine touches it, and a revoke once it ended.
	unreached map[string]int
}

// startForwarder starts node's forwarder (none once Close began). h.mu
// must be held.
func (h *Hub) startForwarder(node string) {
	if _, ok := h.fwd[node]; ok || h.closed {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &forwarder{h: h, node: node, ctx: ctx, cancel: cancel, done: make(chan struct{}), unreached: map[string]int{}}
	h.fwd[node] = f
	go f.run()
}

// takeForwarder removes node's forwarder from the hub and returns it (nil
// when it has none) for the caller to close once h.mu is released: its
// end may wait for a hand-over, and senders take h.mu. h.mu must be held.
func (h *Hub) takeForwarder(node string) *forwarder {
	f := h.fwd[node]
	delete(h.fwd, node)
	return f
}

// close stops the forwarder and waits for it; nil is none. Never under h.mu.
func (f *forwarder) close() {
	if f == nil {
		return
	}
	f.cancel()
	f.mu.Lock()
	if f.it != nil {
		f.it.Stop()
	}
	f.mu.Unlock()
	<-f.done
}

func (f *forwarder) run() {
	defer close(f.done)
	log := f.h.log.With("node", f.node)
	for fails := 0; ; {
		err := f.consume()
		select {
		case <-f.ctx.Done():
			return
		default:
		}
		if errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrConsumerNotFound) {
			log.Info("cluster: the node's inputs are gone; its forwarder ends", "err", err)
			return
		}
		fails++
		log.Warn("cluster: reading the node's inputs", "err", err)
		select {
		case <-f.ctx.Done():
			return
		case <-time.After(linkRetry.Delay(fails)):
		}
	}
}

// consume hands on inputs until the iterator ends.
func (f *forwarder) consume() error {
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	cons, err := f.h.js.Consumer(ctx, InputStream(f.node), inputConsumer)
	cancel()
	if err != nil {
		return err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1))
	if err != nil {
		return err
	}
	f.mu.Lock()
	select {
	case <-f.ctx.Done():
		f.mu.Unlock()
		it.Stop()
		return nil
	default:
	}
	f.it = it
	f.mu.Unlock()
	defer it.Stop()
	for {
		m, err := it.Next()
		if err != nil {
			return err
		}
		f.deliver(m)
	}
}

// hdrInput names a retried input by its first id (Queue).
const hdrInput = "Parley-Input"

// deliver hands one input to the node and acks, naks or fails it by the answer.
func (f *forwarder) deliver(m jetstream.Msg) {
	log := f.h.log.With("node", f.node)
	id := m.Headers().Get(jetstream.MsgIDHeader) // the node's duplicate check
	key := id                                    // the input as its sender knows it
	if first := m.Headers().Get(hdrInput); first != "" {
		key = first
	}
	meta, err := m.Metadata()
	if err != nil {
		meta = &jetstream.MsgMetadata{Timestamp: time.Now(), NumDelivered: 1}
		log.Error("cluster: an input without metadata", "err", err)
	}
	fail := func(reason string, code int, inDoubt bool) {
		if err := m.TermWithReason(reason); err != nil {
			log.Warn("cluster: end a failed input", "id", id, "err", err)
		}
		delete(f.unreached, key)
		f.h.inputEnded(f.node, key, reason, code, inDoubt, m.Data())
	}
	if id == "" {
		fail("an input without a message id", 0, false)
		return
	}
	req := nats.NewMsg(inputSubject(f.node))
	req.Header.Set(jetstream.MsgIDHeader, id)
	req.Data = m.Data()
	ctx, cancel := context.WithTimeout(f.ctx, inputTimeout)
	ans, err := f.h.nc.RequestMsgWithContext(ctx, req)
	cancel()
	if err != nil && f.ctx.Err() != nil {
		// The hub is closing, or the node is being revoked: the input stays,
		// unacked, and comes again (or the revoke ends it). The node may be
		// applying it, unless no one took the request (no responders, which
		// can come just as the forwarder stops). An answer that came is
		// acked and told below all the same: a revoke must not call failed
		// what the node applied.
		f.handedOver(key, meta.NumDelivered, errors.Is(err, nats.ErrNoResponders))
		return
	}
	var a inputAnswer
	if err == nil {
		f.away.Store(false)
		if jerr := json.Unmarshal(ans.Data, &a); jerr != nil {
			err = fmt.Errorf("an answer that is not JSON: %w", jerr)
		} else if a.Refused {
			log.Info("cluster: the node refused an input", "id", id, "reason", a.Error)
			fail(a.Error, a.Code, false)
			return
		} else if a.Error != "" {
			err = errors.New(a.Error)
		}
	}
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.DoubleAck(ctx); err != nil {
			// Not acked: it comes again, and the node knows it by its id.
			log.Warn("cluster: ack an applied input", "id", id, "err", err)
		}
		// Applied before, on an earlier hand-over of this same input whose
		// answer was lost: its sender is still the first copy's, and gets
		// the first result. Only a new input the node knew already (a copy
		// sent again past the duplicate window) is a resend.
		delete(f.unreached, key)
		f.h.settle(key, inputResult{result: a.Result, again: a.Again && meta.NumDelivered == 1})
		return
	}
	f.handedOver(key, meta.NumDelivered, errors.Is(err, nats.ErrNoResponders))
	if waited := time.Since(meta.Timestamp); waited > f.h.opt.InputWait {
		if f.inDoubt(key, meta.NumDelivered) {
			fail(fmt.Sprintf("machine %s did not answer for %v after it was handed this message; it may have reached the agent",
				f.node, f.h.opt.InputWait), 0, true)
			return
		}
		fail(fmt.Sprintf("machine %s did not take it within %v", f.node, f.h.opt.InputWait), 0, false)
		return
	}
	if errors.Is(err, nats.ErrNoResponders) {
		// The node is not connected (stopped, killed, link down): a sender
		// waiting learns at once that its input waits for it.
		f.away.Store(true)
		f.h.settle(key, inputResult{err: fmt.Errorf("%w (%s)", ErrWaiting, f.node)})
	} else {
		log.Warn("cluster: the node did not take an input; it waits", "id", id, "err", err)
	}
	if err := m.NakWithDelay(inputRetry.Delay(int(meta.NumDelivered) - 1)); err != nil {
		log.Warn("cluster: return an input to its stream", "id", id, "err", err)
	}
}

// handedOver counts the nth hand-over of input key that got no answer:
// proven not to have reached the node (no responders), or not.
func (f *forwarder) handedOver(key string, n uint64, unreached bool) {
	if p := f.unreached[key]; unreached && p >= 0 && uint64(p)+1 == n {
		f.unreached[key] = int(n)
		return
	}
	f.unreached[key] = -1
}

// inDoubt says whether input key, handed over n times, may have reached
// the node: some hand-over is not proven to have missed it (one this hub
// did not see counts: it may have been answered to a hub now gone).
func (f *forwarder) inDoubt(key string, n uint64) bool {
	p := f.unreached[key]
	return n > 0 && (p < 0 || uint64(p) < n)
}

// inputEnded tells of an input that will never be applied (known to its
// sender as key), or that may have been (inDoubt): a sender waiting gets
// the reason, and InputFailed is told.
func (h *Hub) inputEnded(node, key, reason string, code int, inDoubt bool, data []byte) {
	h.failed.add(key, nil)
	err := refusalAt(reason, code)
	if inDoubt {
		err = &remoteError{text: reason, err: ErrInDoubt}
	}
	told := h.settle(key, inputResult{err: err})
	if h.opt.InputFailed != nil {
		h.opt.InputFailed(h, FailedInput{Node: node, ID: key, Reason: reason, Data: data, Told: told, InDoubt: inDoubt})
	}
}

// failWaiting fails every input still waiting in node's stream with reason
// (the machine was revoked: its stream goes). Its forwarder f (nil: none)
// has ended: an input it handed over that no answer proved unreached is
// ended in doubt, not failed.
func (h *Hub) failWaiting(ctx context.Context, node string, f *forwarder, reason string) error {
	s, err := h.js.Stream(ctx, InputStream(node))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	// The consumer hands inputs over in the stream's order: every input up
	// to the last one it delivered was handed over at least once.
	var delivered uint64
	if c, err := s.Consumer(ctx, inputConsumer); err == nil {
		delivered = c.CachedInfo().Delivered.Stream
	} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return err
	}
	st := s.CachedInfo().State
	for seq := st.FirstSeq; st.Msgs > 0 && seq <= st.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // taken already (work queue)
		}
		if err != nil {
			return err
		}
		key := m.Header.Get(hdrInput)
		if key == "" {
			key = m.Header.Get(jetstream.MsgIDHeader)
		}
		inDoubt := false
		if seq <= delivered {
			// Handed over at least once: only this hub's memory of every
			// hand-over missing the node proves it did not get it.
			inDoubt = f == nil || f.inDoubt(key, uint64(max(f.unreached[key], 1)))
		}
		if inDoubt {
			h.inputEnded(node, key, reason+"; it had been handed to the machine, which may have applied it", 0, true, m.Data)
			continue
		}
		h.inputEnded(node, key, reason, 0, false, m.Data)
	}
	return nil
}

// inputRetry is the wait before an input is offered to an absent node again,
// by deliveries so far: 100 ms doubling, at most inputBackoffMax.
var inputRetry = backoff.Policy{Min: 100 * time.Millisecond, Max: inputBackoffMax}
