package stream

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// After a crash, parley asks whether a message it was delivering reached
// Claude Code: yes when the session's transcript holds it (a resumed session
// has it); never "no" from a transcript that lacks it, for Claude Code may
// have asked the model and not kept it yet.
func TestCheckDeliveryReadsTheTranscript(t *testing.T) {
	t.Parallel()
	r := newRig(t, claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "remember the word teapot"}, Reply: claudeapi.Text("Remembered.", 1, 0)},
	}})
	before := time.Now()
	s := r.start()
	r.prompt(s, "remember the word teapot")
	r.sink.waitTurns(t, 1)
	r.sink.mu.Lock()
	id := r.sink.sessions[0]
	r.sink.mu.Unlock()
	if err := s.Close(ctxT(t)); err != nil { // Claude Code keeps the transcript by then
		t.Fatal(err)
	}
	spec := r.spec
	spec.ResumeID = id
	for _, c := range []struct {
		name string
		spec driver.Spec
		m    driver.Sent
		want driver.Verdict
	}{
		{"the transcript holds it", spec, driver.Sent{MessageID: "m1", Text: "remember the word teapot", At: before}, driver.Delivered},
		{"not in the transcript", spec, driver.Sent{MessageID: "m2", Text: "a message never sent", At: before}, driver.VerdictUnknown},
		{"only an older record holds its text", spec, driver.Sent{MessageID: "m3", Text: "remember the word teapot", At: time.Now().Add(time.Minute)}, driver.VerdictUnknown},
		{"no session id known", r.spec, driver.Sent{MessageID: "m1", Text: "remember the word teapot", At: before}, driver.VerdictUnknown},
	} {
		v, why := r.drv.CheckDelivery(ctxT(t), c.spec, c.m)
		if v != c.want || why == "" {
			t.Errorf("%s: got %v (%q), want %v with the reason", c.name, v, why, c.want)
		}
	}
}

// Claude Code killed after it took the message and asked the model: when
// its transcript kept the message the driver says it was received; when not,
// the exit says it is not known whether it got there (driver.ErrUnverified),
// never a plain exit the lane would call "failed": the model had it.
func TestKilledAfterTheModelWasAskedIsUnverified(t *testing.T) {
	t.Parallel()
	r := newRig(t, claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "think first"}, Reply: claudeapi.Reply{Wait: claudeapi.Duration(time.Minute),
			Blocks: []claudeapi.Block{{Type: claudeapi.BlockText, Text: "Thought."}}}},
	}})
	s := r.start()
	r.prompt(s, "think first")
	testkit.Eventually(t, 30*time.Second, func() bool {
		for _, rq := range r.srv.ScenarioRequests() {
			if rq.LastUserText() == "think first" {
				return true
			}
		}
		return false
	}, "the model was never asked")
	if err := syscall.Kill(s.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		r.sink.mu.Lock()
		defer r.sink.mu.Unlock()
		return len(r.sink.exits) == 1
	}, "want one Exited")
	r.sink.mu.Lock()
	received, exit := r.sink.received, r.sink.exits[0]
	r.sink.mu.Unlock()
	t.Logf("received: %d; exit: %v", received, exit)
	if received == 0 && !errors.Is(exit, driver.ErrUnverified) {
		t.Fatalf("the model had the message and the transcript did not keep it: exit %v, want it to say unverified", exit)
	}
}
