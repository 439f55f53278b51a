// /handback: "Continue in a terminal" for chat users.

package commands

import (
	"context"
	"encoding/json"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/router"
)

// handBack asks the router to hand the thread's session back to a terminal
// and answers with the command that resumes it there, or, when a turn must
// end first, says that it will happen after the turn.
func (r Runner) handBack(ctx context.Context, route chat.RouteKey, cur *chat.Thread) string {
	if cur == nil {
		return "No thread yet: there is no session to hand back."
	}
	if err := r.Router.Control(ctx, router.Control{From: route, HandBack: true}); err != nil {
		return "could not hand back: " + err.Error()
	}
	th, err := r.Store.Thread(ctx, cur.ID)
	if err != nil {
		return "error: " + err.Error()
	}
	if th.State != chat.ThreadHandedBack {
		return "The session is handed back once the turn in flight ends: /handback again then shows the command."
	}
	command, err := r.handedBackCommand(ctx, th.ID)
	if err != nil {
		return "error: " + err.Error()
	}
	if command == "" {
		return "Handed back: parley's agent has ended."
	}
	return "Handed back. To continue in a terminal:\n" + command
}

// handedBackTail bounds the look back for the handed_back event: it is among
// the thread's last events once the router answered.
const handedBackTail = 16

// handedBackCommand is the command of the thread's newest handed_back
// session event ("" when none is in its tail).
func (r Runner) handedBackCommand(ctx context.Context, id chat.ThreadID) (string, error) {
	evs, err := r.Store.Tail(ctx, id, handedBackTail)
	if err != nil {
		return "", err
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type != chat.TypeSessionInfo {
			continue
		}
		var si chat.SessionInfo
		if err := json.Unmarshal(evs[i].Payload, &si); err != nil {
			return "", err
		}
		if si.State == "handed_back" {
			return si.Command, nil
		}
	}
	return "", nil
}
