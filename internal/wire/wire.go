// Package wire decodes and encodes the chat socket's client inputs (docs/protocol.md).
// Decoding is strict about the frame (a JSON object, UTF-8, a known type, fields
// of the right JSON types) and lenient about the rest (unknown fields are
// ignored); what the fields say is the router's to judge (router.Message.Validate,
// router.Control.Validate). Every refusal says what was wrong in words a client
// developer can act on.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/router"
)

// Input types.
const (
	TypeMessage            = "message"
	TypeStop               = "stop"
	TypeWithdraw           = "withdraw"
	TypePermissionResponse = "permission_response"
	TypeQuestionAnswer     = "question_answer"
	TypeSetMode            = "set_mode"
	TypeSetConfigOption    = "set_config_option"
	TypeResumeSession      = "resume_session"
	TypeHandBack           = "hand_back"
	TypeOpenThread         = "open_thread"
	TypeEditThread         = "edit_thread"
	TypeDeleteThread       = "delete_thread"
	TypePing               = "ping"
)

// Input is one decoded client input; exactly one of its pointers is set, matching
// Type (none for stop and ping). The pointers are the router's own requests:
// the router validates them, once, whatever channel they came from.
type Input struct {
	Type string `json:"type"`

	Message    *router.Message          `json:"-"`
	Withdraw   *router.Withdraw         `json:"-"`
	Permission *router.PermissionAnswer `json:"-"`
	Answer     *router.QuestionAnswer   `json:"-"`
	SetMode    *router.SetMode          `json:"-"`
	SetOption  *router.SetOption        `json:"-"`
	Resume     *ResumeSession           `json:"-"`
	Open       *OpenThread              `json:"-"`
	Edit       *EditThread              `json:"-"`
	Delete     *DeleteThread            `json:"-"`
	HandBack   *HandBack                `json:"-"`
}

// Ref is the id an error about this input should name.
func (in Input) Ref() string {
	var ref string
	switch {
	case in.Message != nil:
		ref = in.Message.MessageID
	case in.Permission != nil:
		ref = in.Permission.RequestID
	case in.Answer != nil:
		ref = in.Answer.RequestID
	case in.Edit != nil:
		ref = in.Edit.Ref
	case in.Resume != nil:
		ref = in.Resume.Ref
	case in.Delete != nil:
		ref = in.Delete.Ref
	case in.HandBack != nil:
		ref = in.HandBack.Ref
	}
	return clip(ref)
}

// ResumeSession continues an agent's own session in a thread the route then
// shows. Ref, the client's, names the answer: done once it is continued (its
// earlier turns imported), or an error.
type ResumeSession struct {
	router.ResumeIntent
	Ref string `json:"ref,omitempty"`
}

// HandBack is "Continue in a terminal" for the route's thread. Ref, the
// client's, names the answer: done once parley took it (the session handed
// back, or due after the turn in flight), or an error.
type HandBack struct {
	Ref string `json:"ref,omitempty"`
}

// OpenThread attaches the route to one of parley's existing threads.
type OpenThread struct {
	ThreadID string `json:"thread_id"`
}

// EditThread renames a thread, (un)archives it or moves it to another agent
// (the route's thread when ThreadID is empty). Ref, the client's, names the
// answer: done, or an error.
type EditThread struct {
	Ref      string `json:"ref,omitempty"`
	ThreadID string `json:"thread_id,omitempty"`
	router.ThreadEdit
}

// DeleteThread deletes a thread (router.DeleteThread).
type DeleteThread struct {
	Ref      string `json:"ref,omitempty"`
	ThreadID string `json:"thread_id"`
	// RemoveWorktree also removes the worktree parley made for the thread;
	// Force removes one with uncommitted changes (router.DeleteOptions).
	RemoveWorktree bool `json:"remove_worktree,omitempty"`
	Force          bool `json:"force,omitempty"`
}

// Frame encodes a client input: v's fields beside "type" (a client's side of
// Decode).
func Frame(typ string, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil || len(b) < 2 || b[0] != '{' {
		b = []byte("{}")
	}
	t, _ := json.Marshal(typ)
	out := append([]byte(`{"type":`), t...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	return append(out, b[1:]...)
}

// Error is a decoding refusal; Code is one of chat.Code*.
type Error struct {
	Code    string
	Message string
	Ref     string
}

func (e *Error) Error() string { return e.Message }

func bad(ref, format string, args ...any) *Error {
	return &Error{Code: chat.CodeBadInput, Message: fmt.Sprintf(format, args...), Ref: ref}
}

// Decode parses one input frame. The error, when not nil, is an *Error.
func Decode(data []byte) (Input, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return Input{}, bad("", "empty input: send a JSON object with a \"type\"")
	}
	if data[0] != '{' {
		return Input{}, bad("", "input must be a JSON object with a \"type\", not %s", kindOf(data[0]))
	}
	if !utf8.Valid(data) {
		return Input{}, bad("", "input is not valid UTF-8")
	}
	var head struct {
		Type      string `json:"type"`
		MessageID string `json:"message_id"`
		RequestID string `json:"request_id"`
		Ref       string `json:"ref"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return Input{}, bad("", "input is not valid JSON: %s", jsonErr(err))
	}
	ref := head.MessageID
	if ref == "" {
		ref = head.RequestID
	}
	if ref == "" {
		ref = head.Ref
	}
	in := Input{Type: head.Type}
	var v any
	switch head.Type {
	case "":
		return Input{}, bad(clip(ref), "input has no \"type\"")
	case TypeStop, TypePing:
	case TypeHandBack:
		in.HandBack = &HandBack{}
		v = in.HandBack
	case TypeMessage:
		in.Message = &router.Message{}
		v = in.Message
	case TypeWithdraw:
		in.Withdraw = &router.Withdraw{}
		v = in.Withdraw
	case TypePermissionResponse:
		in.Permission = &router.PermissionAnswer{}
		v = in.Permission
	case TypeQuestionAnswer:
		in.Answer = &router.QuestionAnswer{}
		v = in.Answer
	case TypeSetMode:
		in.SetMode = &router.SetMode{}
		v = in.SetMode
	case TypeSetConfigOption:
		in.SetOption = &router.SetOption{}
		v = in.SetOption
	case TypeResumeSession:
		in.Resume = &ResumeSession{}
		v = in.Resume
	case TypeOpenThread:
		in.Open = &OpenThread{}
		v = in.Open
	case TypeEditThread:
		in.Edit = &EditThread{}
		v = in.Edit
	case TypeDeleteThread:
		in.Delete = &DeleteThread{}
		v = in.Delete
	default:
		return Input{}, bad(clip(ref), "unknown input type %q", truncate(head.Type, 64))
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			return Input{}, bad(clip(ref), "a field has the wrong type: %s", jsonErr(err))
		}
	}
	return in, nil
}

// clip keeps an id an error names within the ids' limit.
func clip(ref string) string {
	if len(ref) > router.MaxIDLen {
		return ref[:router.MaxIDLen]
	}
	return ref
}

func kindOf(c byte) string {
	switch {
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	}
	return "JSON"
}

func jsonErr(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q should be %s, not %s", te.Field, te.Type, te.Value)
	}
	return err.Error()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
