package wire

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/router"
)

func TestDecode(t *testing.T) {
	t.Parallel()
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
		{`{"type":"hand_back"}`, TypeHandBack, ""},
		{`{"type":"hand_back","ref":"h1"}`, TypeHandBack, ""},
		{`{"type":"hand_back","ref":5}`, "", `field "ref" should be string`},
		{`{"type":"open_thread"}`, "", `"thread_id" is missing`},
		{`{"type":"withdraw","message_id":"m_1"}`, TypeWithdraw, ""},
		{`{"type":"withdraw"}`, "", `"message_id"`},
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
		in, err := accept([]byte(c.in))
		if c.errSays != "" {
			if err == nil || !strings.Contains(err.Error(), c.errSays) || !isBadInput(err) {
				t.Errorf("Decode(%.60q): got err %v, want a bad_input saying %q", c.in, err, c.errSays)
			}
			continue
		}
		if err != nil || in.Type != c.typ {
			t.Errorf("Decode(%.60q): got %q, %v; want %q", c.in, in.Type, err, c.typ)
		}
	}
}

// accept is what the socket does with a frame: decode it, then hand it to the
// router, which validates it first (the same validation REST and ACP get).
func accept(data []byte) (Input, error) {
	in, err := Decode(data)
	if err != nil {
		return in, err
	}
	c := router.Control{Stop: in.Type == TypeStop, HandBack: in.HandBack != nil, Withdraw: in.Withdraw, Permission: in.Permission, Answer: in.Answer, SetMode: in.SetMode, SetOption: in.SetOption}
	switch {
	case in.Message != nil:
		err = in.Message.Validate()
	case in.Resume != nil:
		err = in.Resume.Validate()
	case in.Open != nil:
		if in.Open.ThreadID == "" {
			err = errors.New(`"thread_id" is missing`) // router.OpenThread's check, without a router
		}
	case in.Type != TypePing:
		err = c.Validate()
	}
	return in, err
}

func isBadInput(err error) bool {
	var we *Error
	return errors.As(err, &we) && we.Code == chat.CodeBadInput || errors.Is(err, chat.ErrBadInput) ||
		err.Error() == `"thread_id" is missing`
}

func TestDecodeRefNamesTheInput(t *testing.T) {
	t.Parallel()
	in, err := accept([]byte(`{"type":"message","message_id":"m7"}`))
	if err == nil || in.Ref() != "m7" {
		t.Fatalf("got %q, %v; want ref m7 and an error", in.Ref(), err)
	}
	// hand_back is answered with done {ref} like the other controls.
	in, err = accept([]byte(`{"type":"hand_back","ref":"h1"}`))
	if err != nil || in.Ref() != "h1" {
		t.Fatalf("hand_back: got ref %q, %v; want h1", in.Ref(), err)
	}
	_, err = Decode([]byte(`{"type":"message","message_id":"m8","text":5}`))
	var we *Error
	if !errors.As(err, &we) || we.Ref != "m8" {
		t.Fatalf("got %#v, want ref m8", err)
	}
}

func TestFrameIsWhatDecodeReads(t *testing.T) {
	t.Parallel()
	m := router.Message{MessageID: "m1", Text: "hi", Intent: &router.Intent{New: &router.NewIntent{Cwd: "/tmp"}}}
	in, err := Decode(Frame(TypeMessage, m))
	if err != nil || in.Message == nil || in.Message.Intent.New.Cwd != "/tmp" || in.Message.Text != "hi" {
		t.Fatalf("got %+v, %v", in, err)
	}
	a := router.QuestionAnswer{RequestID: "r", Answers: chat.Answers{"Q?": {Labels: []string{"a"}}, "R?": {Text: "b"}}}
	b := Frame(TypeQuestionAnswer, a)
	if want := `{"type":"question_answer","request_id":"r","answers":{"Q?":["a"],"R?":"b"}}`; string(b) != want {
		t.Fatalf("frame %s, want %s", b, want)
	}
	in, err = Decode(b)
	if err != nil || !reflect.DeepEqual(*in.Answer, a) {
		t.Fatalf("got %+v, %v; want %+v", in.Answer, err, a)
	}
	if got := Frame(TypeStop, struct{}{}); string(got) != `{"type":"stop"}` {
		t.Fatalf("stop frame %s", got)
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
		if _, err := accept(data); err != nil {
			if err.Error() == "" || !isBadInput(err) {
				t.Fatalf("router refusal without words or code: %#v", err)
			}
			return
		}
		ok := map[string]bool{
			TypeMessage: in.Message != nil, TypePermissionResponse: in.Permission != nil,
			TypeQuestionAnswer: in.Answer != nil, TypeSetMode: in.SetMode != nil,
			TypeSetConfigOption: in.SetOption != nil, TypeResumeSession: in.Resume != nil, TypeOpenThread: in.Open != nil,
			TypeStop: true, TypePing: true, TypeWithdraw: in.Withdraw != nil,
		}
		if !ok[in.Type] {
			t.Fatalf("accepted %q without its payload: %+v", in.Type, in)
		}
		if in.Message != nil && (in.Message.MessageID == "" || len(in.Message.MessageID) > router.MaxIDLen) {
			t.Fatalf("accepted a message with a bad id: %q", in.Message.MessageID)
		}
	})
}
