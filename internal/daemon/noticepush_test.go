package daemon_test

import (
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/webpushsvc"
)

// A notice (here from POST /api/notify, as parley notify sends it) is
// pushed, with its text, to the devices that turned notices on, and to no
// other; finished-turn pushes are a setting of their own.
func TestNoticePushesToDevicesThatTurnedNoticesOn(t *testing.T) {
	e := startDaemon(t, nil)
	svc := e.pushService()
	phoneID, phoneTok := e.pair("phone")
	_, tabletTok := e.pair("tablet")
	phone := e.subscribe(svc, phoneTok)
	tablet := e.subscribe(svc, tabletTok)

	var v struct {
		PushTurns   bool `json:"push_turns"`
		PushNotices bool `json:"push_notices"`
	}
	if st := e.call("PATCH", "/api/devices/"+phoneID, phoneTok, map[string]bool{"push_notices": true}, &v); st != 200 || !v.PushNotices || v.PushTurns {
		t.Fatalf("turning the phone's notices on: %d %+v", st, v)
	}

	c := chatsock.Dial(t, e.url(), e.d.Token(), client.Options{Chat: "notice", Since: -1})
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	c.Send(chatsock.Msg("m1", "say hi"))
	end := c.WaitFor(0, 5*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "a turn")
	thread := c.Get(end).Thread

	var out struct {
		Thread chat.ThreadID `json:"thread"`
	}
	if st := e.call("POST", "/api/notify", e.d.Token(), map[string]string{"thread": string(thread), "level": "done", "text": "deploy finished"}, &out); st != 200 || out.Thread != thread {
		t.Fatalf("notify: %d %+v", st, out)
	}
	c.WaitFor(end, 5*time.Second, chatsock.Type(chat.TypeNotice), "the notice on the socket")
	ps := svc.WaitFor(t, 10*time.Second, "the phone's notice push", func(ps []webpushsvc.Push) bool { return kinds(ps, phone) == "notice" })
	m := webpushsvc.Messages[push.Message](ps, phone)[0]
	if m.Body != "deploy finished" || m.Tag != push.ThreadTag(thread) || m.URL != "/#/t/"+string(thread) {
		t.Fatalf("the phone would show %+v", m)
	}
	if k := kinds(ps, tablet); k != "" {
		t.Fatalf("the tablet, which turned nothing on, got %q", k)
	}
}
