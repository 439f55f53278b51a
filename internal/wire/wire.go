// Package wire decodes and encodes the chat socket's client inputs (docs/protocol.md).
// Decoding is strict about what matters (types, required fields, sizes) and
// lenient about the rest (unknown fields are ignored), and every refusal says what
// was wrong in words a client developer can act on.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/chat"
)

// Input types.
const (
	TypeMessage            = "message"
	TypeStop               = "stop"
	TypePermissionResponse = "permission_response"
	TypeQuestionAnswer     = "question_answer"
	TypeSetMode            = "set_mode"
	TypeSetConfigOption    = "set_config_option"
	TypeResumeSession      = "resume_session"
	TypeOpenThread         = "open_thread"
	TypePing               = "ping"
)

// Limits on fields.
const (
	MaxIDLen = 128
)

// Input is one decoded client input; exactly one of its pointers is set, matching Type.
type Input struct {
	Type string `json:"type"`

	Message    *Message            `json:"-"`
	Permission *PermissionResponse `json:"-"`
	Answer     *QuestionAnswer     `json:"-"`
	SetMode    *SetMode            `json:"-"`
	SetOption  *SetConfigOption    `json:"-"`
	Resume     *ResumeSession      `json:"-"`
	Open       *OpenThread         `json:"-"`
}

// Ref is the id an error about this input should name.
func (in Input) Ref() string {
	switch {
	case in.Message != nil:
		return in.Message.MessageID
	case in.Permission != nil:
		return in.Permission.RequestID
	case in.Answer != nil:
		return in.Answer.RequestID
	}
	return ""
}

type Message struct {
	Type      string  `json:"type"`
	MessageID string  `json:"message_id"`
	Text      string  `json:"text"`
	Intent    *Intent `json:"intent,omitempty"`
	Agent     string  `json:"agent,omitempty"`
	Mode      string  `json:"mode,omitempty"`
	Images    []Image `json:"images,omitempty"`
}

type Image struct {
	MIMEType string `json:"mime_type"`
	Data     []byte `json:"data"` // base64 in JSON
}

type Intent struct {
	New    *NewIntent    `json:"new,omitempty"`
	Resume *ResumeIntent `json:"resume,omitempty"`
}

type NewIntent struct {
	Cwd   string `json:"cwd"`
	Agent string `json:"agent,omitempty"`
}

type ResumeIntent struct {
	Agent     string `json:"agent"`
	SessionID string `json:"session_id"`
	Cwd       string `json:"cwd"`
}

type PermissionResponse struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	OptionID  string `json:"option_id,omitempty"`
	Message   string `json:"message,omitempty"`
	Cancelled bool   `json:"cancelled,omitempty"`
}

type QuestionAnswer struct {
	Type      string       `json:"type"`
	RequestID string       `json:"request_id"`
	Answers   chat.Answers `json:"answers"`
	Response  string       `json:"response,omitempty"`
}

type SetMode struct {
	Type   string `json:"type"`
	ModeID string `json:"mode_id"`
}

type SetConfigOption struct {
	Type     string `json:"type"`
	ConfigID string `json:"config_id"`
	Value    string `json:"value"`
}

// OpenThread attaches the route to one of parley's existing threads.
type OpenThread struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
}

type ResumeSession struct {
	Type      string `json:"type"`
	Agent     string `json:"agent"`
	SessionID string `json:"session_id"`
	Cwd       string `json:"cwd"`
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
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return Input{}, bad("", "input is not valid JSON: %s", jsonErr(err))
	}
	ref := head.MessageID
	if ref == "" {
		ref = head.RequestID
	}
	if len(ref) > MaxIDLen {
		ref = ref[:MaxIDLen]
	}
	in := Input{Type: head.Type}
	var err error
	switch head.Type {
	case "":
		return Input{}, bad(ref, "input has no \"type\"")
	case TypeMessage:
		in.Message = &Message{}
		err = strict(data, in.Message)
		if err == nil {
			err = in.Message.validate()
		}
	case TypeStop, TypePing:
	case TypePermissionResponse:
		in.Permission = &PermissionResponse{}
		err = strict(data, in.Permission)
		if err == nil {
			err = in.Permission.validate()
		}
	case TypeQuestionAnswer:
		in.Answer = &QuestionAnswer{}
		err = strict(data, in.Answer)
		if err == nil {
			err = in.Answer.validate()
		}
	case TypeSetMode:
		in.SetMode = &SetMode{}
		err = strict(data, in.SetMode)
		if err == nil && in.SetMode.ModeID == "" {
			err = errors.New("set_mode needs \"mode_id\"")
		}
	case TypeSetConfigOption:
		in.SetOption = &SetConfigOption{}
		err = strict(data, in.SetOption)
		if err == nil && in.SetOption.ConfigID == "" {
			err = errors.New("set_config_option needs \"config_id\"")
		}
	case TypeResumeSession:
		in.Resume = &ResumeSession{}
		err = strict(data, in.Resume)
		if err == nil {
			err = validResume(in.Resume.Agent, in.Resume.SessionID, in.Resume.Cwd)
		}
	case TypeOpenThread:
		in.Open = &OpenThread{}
		err = strict(data, in.Open)
		if err == nil {
			err = validID("thread_id", in.Open.ThreadID)
		}
	default:
		return Input{}, bad(ref, "unknown input type %q", truncate(head.Type, 64))
	}
	if err != nil {
		if e, ok := err.(*Error); ok {
			return Input{}, e
		}
		return Input{}, bad(ref, "%s", err.Error())
	}
	return in, nil
}

func strict(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("a field has the wrong type: %s", jsonErr(err))
	}
	return nil
}

func (m *Message) validate() error {
	if err := validID("message_id", m.MessageID); err != nil {
		return err
	}
	if m.Text == "" && len(m.Images) == 0 {
		return errors.New("message needs \"text\"")
	}
	if m.Intent != nil {
		n, r := m.Intent.New, m.Intent.Resume
		switch {
		case n != nil && r != nil:
			return errors.New("intent has both \"new\" and \"resume\": choose one")
		case n != nil:
			if n.Cwd == "" {
				return errors.New("intent \"new\" needs \"cwd\"")
			}
		case r != nil:
			return validResume(r.Agent, r.SessionID, r.Cwd)
		default:
			return errors.New("intent must be {\"new\": …} or {\"resume\": …}")
		}
	}
	for i, img := range m.Images {
		if img.MIMEType == "" || len(img.Data) == 0 {
			return fmt.Errorf("image %d needs \"mime_type\" and \"data\"", i)
		}
	}
	return nil
}

func (p *PermissionResponse) validate() error {
	if err := validID("request_id", p.RequestID); err != nil {
		return err
	}
	if p.OptionID == "" && !p.Cancelled {
		return errors.New("permission_response needs \"option_id\" or \"cancelled\": true")
	}
	return nil
}

func (q *QuestionAnswer) validate() error {
	if err := validID("request_id", q.RequestID); err != nil {
		return err
	}
	if len(q.Answers) == 0 && q.Response == "" {
		return errors.New("question_answer needs \"answers\" (or a \"response\")")
	}
	for k, v := range q.Answers {
		switch v := v.(type) {
		case string:
		case []any:
			for _, e := range v {
				if _, ok := e.(string); !ok {
					return fmt.Errorf("answer to %q: a list must hold labels (strings)", truncate(k, 64))
				}
			}
		default:
			return fmt.Errorf("answer to %q must be a label, a list of labels, or your own words", truncate(k, 64))
		}
	}
	return nil
}

func validResume(agent, session, cwd string) error {
	switch {
	case agent == "":
		return errors.New("resume needs \"agent\"")
	case session == "":
		return errors.New("resume needs \"session_id\"")
	case cwd == "":
		return errors.New("resume needs \"cwd\"")
	}
	return nil
}

func validID(field, id string) error {
	if id == "" {
		return fmt.Errorf("%q is missing", field)
	}
	if len(id) > MaxIDLen {
		return fmt.Errorf("%q is longer than %d bytes", field, MaxIDLen)
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%q has a control character", field)
		}
	}
	return nil
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
