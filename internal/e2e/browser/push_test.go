//go:build e2e

package browser

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/webpushsvc"
)

// kill9 kills parley serve and everything it started at once, as a crash or a
// power cut does: no shutdown runs.
func (r *rig) kill9() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.cmd = nil
	r.mu.Unlock()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

// call makes a REST call with bearer, returning the status.
func (r *rig) call(t testing.TB, method, path, bearer string, in, out any) int {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, r.Base+path, body)
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := (&http.Client{Timeout: wait}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

// pushService starts the Web Push stand-in, told the daemon's VAPID key.
func (r *rig) pushService(t testing.TB) *webpushsvc.Service {
	t.Helper()
	if !r.pushes {
		t.Fatal("the push stand-in is reached only by a rig of newPushRig")
	}
	svc := webpushsvc.Start(t)
	var key struct {
		PublicKey string `json:"public_key"`
	}
	r.rest(t, "GET", "/api/push/key", nil, &key)
	svc.ExpectKey(t, key.PublicKey)
	return svc
}

// pairDevice pairs a program device and subscribes it at svc.
func (r *rig) pairDevice(t testing.TB, svc *webpushsvc.Service, name string) (id, token string, sub *webpushsvc.Sub) {
	t.Helper()
	var pc struct{ Code string }
	r.call(t, "POST", "/api/pair-codes", r.Token, map[string]string{"name": name}, &pc)
	var out struct {
		DeviceID string `json:"device_id"`
		Token    string `json:"token"`
	}
	if st := r.call(t, "POST", "/api/pair", "", map[string]string{"code": pc.Code}, &out); st != 200 {
		t.Fatalf("pair: %d", st)
	}
	sub, js := svc.Subscribe(t)
	if st := r.call(t, "POST", "/api/push/subscriptions", out.Token, json.RawMessage(js), nil); st != 200 {
		t.Fatalf("subscribe: %d", st)
	}
	return out.DeviceID, out.Token, sub
}

// count counts a device's pushes of a kind for a tag.
func count(ms []push.Message, kind, tag string) int {
	n := 0
	for _, m := range ms {
		if m.Kind == kind && m.Tag == tag {
			n++
		}
	}
	return n
}

// The real Claude Code asks for permission: each subscribed device gets one
// push, decrypted as its phone would; a 410 endpoint is dropped. Answered from
// the laptop while the phone's push service is down, the closing push waits in
// the outbox; parley is killed with -9, restarted, and sends it then, once.
// After the restart, a reconnect and a session resume, a new card's pushes
// arrive and the first card still has exactly one open and one closing push
// per device.
func TestPushExactlyOnceAcrossKill9(t *testing.T) {
	r := newPushRig(t)
	svc := r.pushService(t)
	_, _, phone := r.pairDevice(t, svc, "phone")
	_, laptopTok, laptop := r.pairDevice(t, svc, "laptop")
	goneID, _, gone := r.pairDevice(t, svc, "old phone")
	svc.SetStatus(gone, http.StatusGone)

	c := chatsock.Dial(t, r.Base, laptopTok, client.Options{Chat: "push", Since: -1})
	c.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "ready")
	c.Send(chatsock.Msg("m1", PromptBash))
	i := c.WaitFor(0, wait, chatsock.Type(chat.TypePermissionRequest), "permission card")
	ev := c.Snapshot()[i]
	rid := chatsock.FieldOf(ev, "request_id").(string)
	thread := ev.Thread
	tag := push.Tag(thread, rid)

	ps := svc.WaitFor(t, wait, "one push per device", func(ps []webpushsvc.Push) bool {
		return len(webpushsvc.Messages[push.Message](ps, phone)) == 1 && len(webpushsvc.Messages[push.Message](ps, laptop)) == 1 && svc.Attempts(gone) == 1
	})
	m := webpushsvc.Messages[push.Message](ps, phone)[0]
	if m.Kind != "open" || m.Tag != tag || !strings.HasPrefix(m.Title, "Claude Code on ") || !strings.HasPrefix(m.Body, "asks for permission") ||
		m.URL != "/#/t/"+string(thread)+"?card="+rid {
		t.Fatalf("the phone would show %+v", m)
	}
	for _, p := range ps {
		if p.Urgency != "high" {
			t.Fatalf("a card's push is not urgent: %+v", p)
		}
	}

	// The phone's push service goes down; the card is answered on the laptop.
	svc.SetStatus(phone, http.StatusInternalServerError)
	c.Send(map[string]any{"type": "permission_response", "request_id": rid, "option_id": chat.OptionAllowOnce})
	svc.WaitFor(t, wait, "the laptop's closing push, and a failed try for the phone", func(ps []webpushsvc.Push) bool {
		return count(webpushsvc.Messages[push.Message](ps, laptop), "close", tag) == 1 && svc.Attempts(phone) >= 2
	})
	c.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "turn over")

	r.kill9()
	svc.SetStatus(phone, http.StatusCreated)
	r.start()
	svc.WaitFor(t, wait, "the phone's closing push, after the restart", func(ps []webpushsvc.Push) bool {
		return count(webpushsvc.Messages[push.Message](ps, phone), "close", tag) == 1
	})

	// Reconnect where the laptop left off; the next message resumes Claude
	// Code's session, which asks a question: a new card, new pushes.
	c2 := chatsock.Dial(t, r.Base, laptopTok, client.Options{Chat: "push", Since: 0, Thread: thread})
	c2.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "replayed")
	c2.Send(chatsock.Msg("m2", PromptAsk))
	j := c2.WaitFor(0, wait, chatsock.Type(chat.TypeQuestion), "question card")
	tag2 := push.Tag(thread, chatsock.FieldOf(c2.Snapshot()[j], "request_id").(string))
	ps = svc.WaitFor(t, wait, "the question's pushes", func(ps []webpushsvc.Push) bool {
		return count(webpushsvc.Messages[push.Message](ps, phone), "open", tag2) == 1 && count(webpushsvc.Messages[push.Message](ps, laptop), "open", tag2) == 1
	})
	for _, sub := range []*webpushsvc.Sub{phone, laptop} {
		ms := webpushsvc.Messages[push.Message](ps, sub)
		if count(ms, "open", tag) != 1 || count(ms, "close", tag) != 1 || len(ms) != 3 {
			t.Fatalf("device %s: want one open and one closing push for the first card and one for the question, got %s", sub.ID, webpushsvc.Summary(ps))
		}
	}
	if q := webpushsvc.Messages[push.Message](ps, phone)[2]; q.Body != "asks a question: "+QuestionColor {
		t.Fatalf("the question's push would show %+v", q)
	}
	if len(webpushsvc.Messages[push.Message](ps, gone)) != 0 || svc.Attempts(gone) != 1 || len(svc.Rejected()) != 0 {
		t.Fatalf("the 410 endpoint was tried %d times (want once); refused: %v", svc.Attempts(gone), svc.Rejected())
	}
	var list struct {
		Devices []struct {
			ID   string
			Push bool
		}
	}
	r.call(t, "GET", "/api/devices", r.Token, nil, &list)
	for _, d := range list.Devices {
		if d.ID == goneID && d.Push {
			t.Fatal("the 410 endpoint is still subscribed")
		}
	}
}
