package tui

import "testing"

// A message a schedule or a trigger sent is shown as theirs, not "you".
func TestAScheduledMessageSaysWhichSchedule(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	connected(h, thread1)
	h.frames(
		`{"type":"user_message","thread":"t_1","seq":1,"message_id":"sch_1@946890000","text":"report","from":{"channel":"schedule","chat":"sch_1"},"origin":{"kind":"schedule","id":"sch_1","name":"nightly"}}`,
		`{"type":"user_message","thread":"t_1","seq":2,"message_id":"delivery:d1","text":"CI failed","from":{"channel":"trigger","chat":"trg_1"},"origin":{"kind":"trigger","id":"trg_1"}}`,
	)
	h.wantScreen("schedule nightly  queued\nreport", "trigger trg_1  queued\nCI failed")
	h.wantNotScreen("you (schedule)", "you (trigger)")
}
