package chat

import "slices"

// draftEnders are the log events that end the provisional text shown before
// them (docs/protocol.md, "Provisional text"): the final words, a tool the
// agent moved on to, a card, the turn's end.
var draftEnders = []string{TypeAgentChunk, TypeThoughtChunk, TypeToolCall, TypePermissionRequest,
	TypeQuestion, TypePromptDone, TypeTurnStatus}

// EndsDraft reports whether a log event of type typ ends the provisional
// text shown before it. The lane (which appends only onto a draft nothing
// ended), parley chat and the dashboard (ui/src/fold.ts, held to this list by
// a test) must agree: a client that drops a draft the lane still appends to
// shows no provisional text for the rest of the answer.
func EndsDraft(typ string) bool { return slices.Contains(draftEnders, typ) }
