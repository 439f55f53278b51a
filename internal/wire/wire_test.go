package wire

import (
	"errors"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	cases := []struct {
		in      string
		typ     string
		errSays string
	}{
		{`{"type":"message","message_id":"m1","text":"hi"}`, TypeMessage, ""},
		{`{"type":"message","message_id":"m1","text":"hi","intent":{"new":{"cwd":"/tmp"}}}`, TypeMessage, ""},
		{`{"type":"message","message_id":"m1","text":"hi","intent":{}}`, "", `intent must be`},
		{`{"type":"message","message_id":"m1","text":"hi","intent":{"new":{"cwd":"/a"},"resume":{"agent":"a","session_id":"s","cwd":"/a"}}}`, "", "choose one"},
		{`{"type":"message","message_id":"m1","text":"hi","intent":{"resume":{"agent":"a","cwd":"/a"}}}`, "", `needs "session_id"`},
		{`{"type":"stop"}`, TypeStop, ""},
		{`{"type":"ping","extra":1}`, TypePing, ""},
		{`{"type":"permission_response","request_id":"r","option_id":"allow"}`, TypePermissionResponse, ""},
		{`{"type":"permission_response","request_id":"r","cancelled":true}`, TypePermissionResponse, ""},
		{`{"type":"permission_response","request_id":"r"}`, "", `needs "option_id"`},
		{`{"type":"question_answer","request_id":"r","answers":{"Q?":"A"}}`, TypeQuestionAnswer, ""},
		{`{"type":"question_answer","request_id":"r","answers":{"Q?":["A","B"]}}`, TypeQuestionAnswer, ""},
		{`{"type":"question_answer","request_id":"r","answers":{"Q?":5}}`, "", "a label, a list of labels"},
		{`{"type":"question_answer","request_id":"r","answers":{"Q?":[1]}}`, "", "must hold labels"},
		{`{"type":"set_mode","mode_id":"plan"}`, TypeSetMode, ""},
		{`{"type":"set_mode"}`, "", `needs "mode_id"`},
		{`{"type":"set_config_option","config_id":"model","value":"x"}`, TypeSetConfigOption, ""},
		{`{"type":"resume_session","agent":"claude","session_id":"s","cwd":"/x"}`, TypeResumeSession, ""},
		{`{"type":"open_thread","thread_id":"t_1"}`, TypeOpenThread, ""},
		{`{"type":"open_thread"}`, "", `"thread_id" is missing`},
		{`{"type":"message","message_id":"` + strings.Repeat("a", 200) + `","text":"x"}`, "", "longer than"},
		{`{"type":"message","message_id":"a\u0001","text":"x"}`, "", "control character"},
		{``, "", "empty input"},
		{`  `, "", "empty input"},
		{`"str"`, "", "not a string"},
		{`null`, "", "not null"},
		{`42`, "", "not a number"},
		{`{"type":`, "", "not valid JSON"},
		{"{\"type\":\"ping\",\"x\":\"\xff\"}", "", "UTF-8"},
		{`{"type":"nope"}`, "", `unknown input type "nope"`},
		{`{"type":"message","message_id":"m","text":["a"]}`, "", "wrong type"},
	}
	for _, c := range cases {
		in, err := Decode([]byte(c.in))
		if c.errSays != "" {
			var we *Error
			if !errors.As(err, &we) || !strings.Contains(we.Message, c.errSays) {
				t.Errorf("Decode(%.60q): got err %v, want one saying %q", c.in, err, c.errSays)
			}
			continue
		}
		if err != nil || in.Type != c.typ {
			t.Errorf("Decode(%.60q): got %q, %v; want %q", c.in, in.Type, err, c.typ)
		}
	}
}

func TestDecodeRefNamesTheInput(t *testing.T) {
	_, err := Decode([]byte(`{"type":"message","message_id":"m7"}`))
	var we *Error
	if !errors.As(err, &we) || we.Ref != "m7" {
		t.Fatalf("got %#v, want ref m7", err)
	}
}

// FuzzDecode: no input panics; every refusal is an *Error with words; every
// acceptance carries the payload its type names.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","message_id":"m1","text":"hi","intent":{"new":{"cwd":"/tmp"}}}`,
		`{"type":"question_answer","request_id":"r","answers":{"Q":["a","b"]},"response":"x"}`,
		`{"type":"permission_response","request_id":"r","option_id":"allow","message":"why"}`,
		`{"type":"resume_session","agent":"a","session_id":"s","cwd":"/"}`,
		`[1,2]`, `{"type":1}`, `{}`, `{"type":"stop"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := Decode(data)
		if err != nil {
			var we *Error
			if !errors.As(err, &we) || we.Message == "" || we.Code == "" {
				t.Fatalf("refusal without words: %#v", err)
			}
			return
		}
		ok := map[string]bool{
			TypeMessage: in.Message != nil, TypePermissionResponse: in.Permission != nil,
			TypeQuestionAnswer: in.Answer != nil, TypeSetMode: in.SetMode != nil,
			TypeSetConfigOption: in.SetOption != nil, TypeResumeSession: in.Resume != nil, TypeOpenThread: in.Open != nil,
			TypeStop: true, TypePing: true,
		}
		if !ok[in.Type] {
			t.Fatalf("accepted %q without its payload: %+v", in.Type, in)
		}
		if in.Message != nil && (in.Message.MessageID == "" || len(in.Message.MessageID) > MaxIDLen) {
			t.Fatalf("accepted a message with a bad id: %q", in.Message.MessageID)
		}
	})
}
