package tui

import "testing"

// parley chat draws the shared fold (internal/fold): a failed message sent
// again under its id (a retry) is logged as queued again, and the screen
// follows the log rather than keeping it failed.
func TestARetriedMessageIsNoLongerShownFailed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	connected(h, thread1)
	h.frames(
		`{"type":"user_message","thread":"t_1","seq":1,"message_id":"m_x","text":"hi","from":{"channel":"web","chat":"d"}}`,
		`{"type":"delivery","thread":"t_1","seq":2,"message_id":"m_x","state":"failed","detail":"the agent is not running"}`,
	)
	h.wantScreen("you (web)  ✗ failed", "✗ the agent is not running")
	h.frames(`{"type":"delivery","thread":"t_1","seq":3,"message_id":"m_x","state":"queued"}`)
	h.wantScreen("you (web)  queued")
	h.wantNotScreen("failed", "the agent is not running")
}
