package daemon_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/channel/web"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/webpushsvc"
)

// pair makes a device with its own token through a pairing code.
func (e *testEnv) pair(name string) (id, token string) {
	e.t.Helper()
	var pc pairCode
	e.call("POST", "/api/pair-codes", e.d.Token(), map[string]string{"name": name}, &pc)
	var out struct {
		DeviceID string `json:"device_id"`
		Token    string `json:"token"`
	}
	if st := e.call("POST", "/api/pair", "", map[string]string{"code": pc.Code}, &out); st != 200 {
		e.t.Fatalf("pair %s: %d", name, st)
	}
	return out.DeviceID, out.Token
}

// pushService starts the Web Push stand-in, told the daemon's VAPID key.
func (e *testEnv) pushService() *webpushsvc.Service {
	e.t.Helper()
	svc := webpushsvc.Start(e.t)
	var key struct {
		PublicKey string `json:"public_key"`
	}
	if st := e.call("GET", "/api/push/key", e.d.Token(), nil, &key); st != 200 {
		e.t.Fatalf("push key: %d", st)
	}
	svc.ExpectKey(e.t, key.PublicKey)
	return svc
}

// subscribe makes a subscription at svc and hands it to the daemon as device token.
func (e *testEnv) subscribe(svc *webpushsvc.Service, token string) *webpushsvc.Sub {
	e.t.Helper()
	sub, js := svc.Subscribe(e.t)
	if st := e.call("POST", "/api/push/subscriptions", token, json.RawMessage(js), nil); st != 200 {
		e.t.Fatalf("subscribe: %d", st)
	}
	return sub
}

// A permission card sends one push to each subscribed device, decrypted by the
// stand-in as a phone would: who asks, on which machine, what, tagged with the
// card and urgent; none to the device that has the thread on screen; an
// endpoint answering 410 is dropped. Answered from another device, the card
// sends a closing push with the same tag.
func TestPushOnCardOncePerDeviceAndClosingPush(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	svc := e.pushService()
	if st := e.call("POST", "/api/push/subscriptions", e.d.Token(), map[string]any{}, nil); st != 400 {
		t.Fatalf("the shared token subscribed: %d", st)
	}
	_, phoneTok := e.pair("phone")
	for _, bad := range []string{`{"endpoint":"ftp://x/y","keys":{"p256dh":"AA","auth":"AA"}}`, `{"endpoint":"https://push.example/1","keys":{"p256dh":"AA","auth":"AA"}}`, `[]`} {
		if st := e.call("POST", "/api/push/subscriptions", phoneTok, json.RawMessage(bad), nil); st != 400 {
			t.Fatalf("a bad subscription %s got %d", bad, st)
		}
	}
	// An endpoint that is not https, or whose address the sender may not dial
	// (here the cloud metadata address), is refused with the reason.
	_, js := svc.Subscribe(t)
	for endpoint, why := range map[string]string{"http://push.example.com/1": "https", "https://169.254.169.254/latest": "169.254.169.254"} {
		var sub map[string]any
		json.Unmarshal(js, &sub)
		sub["endpoint"] = endpoint
		var refused struct{ Error struct{ Message string } }
		if st := e.call("POST", "/api/push/subscriptions", phoneTok, sub, &refused); st != 400 || !strings.Contains(refused.Error.Message, why) {
			t.Fatalf("subscribing %s: %d %q", endpoint, st, refused.Error.Message)
		}
	}
	_, laptopTok := e.pair("laptop")
	goneID, goneTok := e.pair("old phone")
	phone := e.subscribe(svc, phoneTok)
	laptop := e.subscribe(svc, laptopTok)
	gone := e.subscribe(svc, goneTok)
	svc.SetStatus(gone, 410)

	// The laptop shows the thread: its socket is open and its page said so.
	c := chatsock.Dial(t, e.url(), laptopTok, client.Options{Chat: "push", Since: -1})
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	c.Send(chatsock.Msg("m0", "say hi"))
	c.WaitFor(0, 5*time.Second, chatsock.PromptDone("m0", chat.StopEndTurn), "first turn")
	thread := c.Snapshot()[c.WaitFor(0, time.Second, chatsock.Type(chat.TypeAgentChunk), "chunk")].Thread
	if st := e.call("POST", "/api/push/screen", laptopTok, map[string]string{"thread": string(thread)}, nil); st != 200 {
		t.Fatalf("screen: %d", st)
	}
	c.Send(chatsock.Msg("m1", "permission Bash"))
	i := c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypePermissionRequest), "card")
	rid := chatsock.FieldOf(c.Snapshot()[i], "request_id").(string)
	tag := push.Tag(thread, rid)

	ps := svc.WaitFor(t, 10*time.Second, "the phone's push", func(ps []webpushsvc.Push) bool { return len(webpushsvc.Messages[push.Message](ps, phone)) == 1 })
	m := webpushsvc.Messages[push.Message](ps, phone)[0]
	if m.Kind != "open" || m.Tag != tag || !strings.HasPrefix(m.Title, "echo on ") || m.Body != "asks for permission: Bash" ||
		!strings.Contains(m.URL, string(thread)) || ps[0].Urgency != "high" {
		t.Fatalf("the phone would show %+v (urgency %q)", m, ps[0].Urgency)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		var list struct {
			Devices []struct {
				ID   string
				Push bool
			}
		}
		e.call("GET", "/api/devices", e.d.Token(), nil, &list)
		for _, d := range list.Devices {
			if d.ID == goneID {
				return !d.Push
			}
		}
		return false
	}, "the 410 endpoint is dropped")

	// Answered on the laptop: the phone's notification is replaced by a closing one.
	c.Send(map[string]any{"type": "permission_response", "request_id": rid, "option_id": "allow"})
	ps = svc.WaitFor(t, 10*time.Second, "the closing push", func(ps []webpushsvc.Push) bool { return len(webpushsvc.Messages[push.Message](ps, phone)) == 2 })
	if m := webpushsvc.Messages[push.Message](ps, phone)[1]; m.Kind != "close" || m.Tag != tag {
		t.Fatalf("closing push: %+v", m)
	}
	// A second card, with the laptop's page hidden: now the laptop gets it too.
	e.call("POST", "/api/push/screen", laptopTok, map[string]string{"thread": ""}, nil)
	c.WaitFor(0, 5*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "turn over")
	c.Send(chatsock.Msg("m2", "permission Edit"))
	svc.WaitFor(t, 10*time.Second, "the second card's pushes", func(ps []webpushsvc.Push) bool {
		return len(webpushsvc.Messages[push.Message](ps, phone)) == 3 && len(webpushsvc.Messages[push.Message](ps, laptop)) == 1
	})
	ps = svc.Pushes()
	if n := len(webpushsvc.Messages[push.Message](ps, laptop)); n != 1 || webpushsvc.Messages[push.Message](ps, laptop)[0].Body != "asks for permission: Edit" {
		t.Fatalf("the laptop, which had the thread on screen, got %d pushes: %s", n, webpushsvc.Summary(ps))
	}
	if len(webpushsvc.Messages[push.Message](ps, gone)) != 0 || len(svc.Rejected()) != 0 {
		t.Fatalf("gone endpoint got pushes, or pushes were refused: %v", svc.Rejected())
	}
}

// A push never carries a tool's input: a command holding a secret opens a
// card, and the phone is told only the tool's name.
func TestPushNeverCarriesTheToolsInput(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	svc := e.pushService()
	_, phoneTok := e.pair("phone")
	phone := e.subscribe(svc, phoneTok)
	c := chatsock.Dial(t, e.url(), e.d.Token(), client.Options{Chat: "secret", Since: -1})
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	const secret = "ghp_S3CRETtoken0123456789"
	c.Send(chatsock.Msg("m1", "permission Bash curl -H 'Authorization: Bearer "+secret+"' https://api.github.com/user"))
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypePermissionRequest), "card")
	ps := svc.WaitFor(t, 10*time.Second, "the phone's push", func(ps []webpushsvc.Push) bool { return len(webpushsvc.Messages[push.Message](ps, phone)) == 1 })
	m := webpushsvc.Messages[push.Message](ps, phone)[0]
	if m.Body != "asks for permission: Bash" {
		t.Errorf("body %q, want %q", m.Body, "asks for permission: Bash")
	}
	for _, p := range ps {
		if strings.Contains(string(p.Plaintext), secret) || strings.Contains(string(p.Plaintext), "Authorization") {
			t.Fatalf("a push carries the command: %s", p.Plaintext)
		}
	}
}

// A device that signed out gets no more pushes: its subscription is dropped
// with its session, while a device still signed in gets the card's push.
func TestPushGoesOnlyToSignedInDevices(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	svc := e.pushService()
	_, phoneTok := e.pair("phone")
	_, laptopTok := e.pair("laptop")
	phone := e.subscribe(svc, phoneTok)
	laptop := e.subscribe(svc, laptopTok)
	req, _ := http.NewRequest("POST", e.url()+"/logout", nil)
	req.AddCookie(&http.Cookie{Name: web.CookieName, Value: phoneTok})
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if st := e.call("GET", "/api/devices", phoneTok, nil, nil); st != 401 {
		t.Fatalf("the signed-out phone still reaches the API: %d", st)
	}
	c := chatsock.Dial(t, e.url(), e.d.Token(), client.Options{Chat: "out", Since: -1})
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	c.Send(chatsock.Msg("m1", "permission Bash"))
	i := c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypePermissionRequest), "card")
	rid := chatsock.FieldOf(c.Snapshot()[i], "request_id").(string)
	svc.WaitFor(t, 10*time.Second, "the laptop's push", func(ps []webpushsvc.Push) bool { return len(webpushsvc.Messages[push.Message](ps, laptop)) == 1 })
	c.Send(map[string]any{"type": "permission_response", "request_id": rid, "option_id": "allow"})
	// The laptop's closing push was queued after every open push, and the
	// sender goes in order: once it arrived, the phone's would have too.
	ps := svc.WaitFor(t, 10*time.Second, "the laptop's pushes", func(ps []webpushsvc.Push) bool { return len(webpushsvc.Messages[push.Message](ps, laptop)) == 2 })
	if n := len(webpushsvc.Messages[push.Message](ps, phone)); n != 0 {
		t.Fatalf("the signed-out phone got %d pushes: %s", n, webpushsvc.Summary(ps))
	}
}

// A device keeps at most push.MaxPerDevice subscriptions (a new one replaces
// its oldest), and an endpoint that redirects is not followed: the push
// service stand-in behind the redirect gets nothing.
func TestPushSubscriptionsCappedAndRedirectsNotFollowed(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	svc := e.pushService()
	_, phoneTok := e.pair("phone")
	var subs []*webpushsvc.Sub
	for range push.MaxPerDevice + 1 {
		subs = append(subs, e.subscribe(svc, phoneTok))
	}
	// A laptop's subscription points at a server that redirects to a real endpoint.
	_, laptopTok := e.pair("laptop")
	target, js := svc.Subscribe(t)
	var sub map[string]any
	json.Unmarshal(js, &sub)
	to := sub["endpoint"].(string)
	var redirected atomic.Int64
	redir := webpushsvc.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirected.Add(1)
		http.Redirect(w, r, to, http.StatusTemporaryRedirect)
	}))
	sub["endpoint"] = redir.URL + "/push"
	if st := e.call("POST", "/api/push/subscriptions", laptopTok, sub, nil); st != 200 {
		t.Fatalf("subscribe: %d", st)
	}

	c := chatsock.Dial(t, e.url(), e.d.Token(), client.Options{Chat: "cap", Since: -1})
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	c.Send(chatsock.Msg("m1", "permission Bash"))
	i := c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypePermissionRequest), "card")
	got := func(n int) func([]webpushsvc.Push) bool {
		return func(ps []webpushsvc.Push) bool {
			for _, s := range subs[1:] {
				if len(webpushsvc.Messages[push.Message](ps, s)) != n {
					return false
				}
			}
			return true
		}
	}
	svc.WaitFor(t, 10*time.Second, "the newest subscriptions' pushes", got(1))
	testkit.Eventually(t, 10*time.Second, func() bool { return redirected.Load() > 0 }, "the redirecting endpoint is tried")
	// The sender goes one push at a time: once the closing pushes queued
	// after it arrived, the redirected attempt (and any request it led to) is over.
	c.Send(map[string]any{"type": "permission_response", "request_id": chatsock.FieldOf(c.Snapshot()[i], "request_id").(string), "option_id": "allow"})
	svc.WaitFor(t, 10*time.Second, "the closing pushes", got(2))
	ps := svc.Pushes()
	if n := len(webpushsvc.Messages[push.Message](ps, subs[0])); n != 0 {
		t.Errorf("the replaced (oldest) subscription got %d pushes", n)
	}
	if svc.Attempts(target) != 0 {
		t.Errorf("the redirect was followed: the endpoint behind it got %d requests", svc.Attempts(target))
	}
}

// kinds lists a device's pushes' kinds in order.
func kinds(ps []webpushsvc.Push, sub *webpushsvc.Sub) string {
	var ks []string
	for _, m := range webpushsvc.Messages[push.Message](ps, sub) {
		ks = append(ks, m.Kind)
	}
	return strings.Join(ks, " ")
}

// A finished turn and an error push only to the devices that turned them on
// (PATCH /api/devices/{id}; off by default), once each, and not to a device
// with the thread on screen; turned off, they stop.
func TestOptionalPushesPerDevice(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	svc := e.pushService()
	phoneID, phoneTok := e.pair("phone")
	laptopID, laptopTok := e.pair("laptop")
	_, tabletTok := e.pair("tablet")
	phone := e.subscribe(svc, phoneTok)
	laptop := e.subscribe(svc, laptopTok)
	tablet := e.subscribe(svc, tabletTok)

	type view struct {
		ID         string
		PushTurns  bool `json:"push_turns"`
		PushErrors bool `json:"push_errors"`
	}
	var v view
	if st := e.call("PATCH", "/api/devices/"+phoneID, phoneTok, map[string]bool{"push_turns": true, "push_errors": true}, &v); st != 200 || !v.PushTurns || !v.PushErrors {
		t.Fatalf("turning the phone's pushes on: %d %+v", st, v)
	}
	if st := e.call("PATCH", "/api/devices/"+laptopID, e.d.Token(), map[string]bool{"push_turns": true}, &v); st != 200 || !v.PushTurns || v.PushErrors {
		t.Fatalf("turning the laptop's turn pushes on: %d %+v", st, v)
	}
	if st := e.call("PATCH", "/api/devices/d-nosuch", e.d.Token(), map[string]bool{"push_turns": true}, nil); st != 404 {
		t.Fatalf("an unknown device: %d", st)
	}
	var list struct{ Devices []view }
	e.call("GET", "/api/devices", e.d.Token(), nil, &list)
	for _, d := range list.Devices {
		if d.ID != phoneID && d.ID != laptopID && (d.PushTurns || d.PushErrors) {
			t.Fatalf("a device's optional pushes are on by default: %+v", d)
		}
	}

	// The laptop shows the thread: its socket is open and its page said so.
	c := chatsock.Dial(t, e.url(), laptopTok, client.Options{Chat: "opt", Since: -1})
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	c.Send(chatsock.Msg("m1", "say hi"))
	c.WaitFor(0, 5*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "first turn")
	thread := c.Snapshot()[c.WaitFor(0, time.Second, chatsock.Type(chat.TypeAgentChunk), "chunk")].Thread
	ps := svc.WaitFor(t, 10*time.Second, "the phone's and laptop's turn pushes", func(ps []webpushsvc.Push) bool {
		return kinds(ps, phone) == "turn" && kinds(ps, laptop) == "turn"
	})
	m := webpushsvc.Messages[push.Message](ps, phone)[0]
	if m.Tag != push.ThreadTag(thread) || !strings.HasPrefix(m.Title, "echo on ") || m.Body != "finished its turn" || m.URL != "/#/t/"+string(thread) {
		t.Fatalf("the phone would show %+v", m)
	}
	if st := e.call("POST", "/api/push/screen", laptopTok, map[string]string{"thread": string(thread)}, nil); st != 200 {
		t.Fatalf("screen: %d", st)
	}

	// The agent dies mid-turn: the phone hears of the error (and the laptop,
	// with the thread on screen and error pushes off, of nothing).
	c.Send(chatsock.Msg("m2", "crash"))
	ps = svc.WaitFor(t, 10*time.Second, "the phone's error push", func(ps []webpushsvc.Push) bool { return kinds(ps, phone) == "turn error" })
	if m := webpushsvc.Messages[push.Message](ps, phone)[1]; m.Body != "the agent failed" || m.Tag != push.ThreadTag(thread) {
		t.Fatalf("the phone would show %+v", m)
	}

	// The phone turns turn pushes off; the laptop, on screen, gets none; the
	// next error is the phone's last push, after no turn push.
	if st := e.call("PATCH", "/api/devices/"+phoneID, phoneTok, map[string]bool{"push_turns": false}, &v); st != 200 || v.PushTurns || !v.PushErrors {
		t.Fatalf("turning the phone's turn pushes off: %d %+v", st, v)
	}
	c.Send(chatsock.Msg("m3", "say again"))
	c.WaitFor(0, 5*time.Second, chatsock.PromptDone("m3", chat.StopEndTurn), "third turn")
	c.Send(chatsock.Msg("m4", "crash"))
	ps = svc.WaitFor(t, 10*time.Second, "the phone's second error push", func(ps []webpushsvc.Push) bool {
		return strings.HasSuffix(kinds(ps, phone), "error error")
	})
	if k := kinds(ps, phone); k != "turn error error" {
		t.Fatalf("the phone got %q", k)
	}
	if k := kinds(ps, laptop); k != "turn" {
		t.Fatalf("the laptop, with the thread on screen from its second turn, got %q", k)
	}
	if k := kinds(ps, tablet); k != "" {
		t.Fatalf("the tablet, which turned nothing on, got %q", k)
	}
}

// A push queued for a device that then signs out is dropped, never sent: the
// phone's push service fails, its card's push waits to be tried again, the
// phone signs out; the push is not tried again, while the laptop's next push
// still goes.
func TestQueuedPushDroppedWhenDeviceSignsOut(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	svc := e.pushService()
	_, phoneTok := e.pair("phone")
	_, laptopTok := e.pair("laptop")
	phone := e.subscribe(svc, phoneTok)
	laptop := e.subscribe(svc, laptopTok)
	svc.SetStatus(phone, http.StatusInternalServerError)

	c := chatsock.Dial(t, e.url(), e.d.Token(), client.Options{Chat: "out", Since: -1})
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	c.Send(chatsock.Msg("m1", "permission Bash"))
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypePermissionRequest), "card")
	svc.WaitFor(t, 10*time.Second, "the laptop's push and a failed try for the phone", func(ps []webpushsvc.Push) bool {
		return len(webpushsvc.Messages[push.Message](ps, laptop)) == 1 && svc.Attempts(phone) == 1
	})

	req, _ := http.NewRequest("POST", e.url()+"/logout", nil)
	req.AddCookie(&http.Cookie{Name: web.CookieName, Value: phoneTok})
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	svc.SetStatus(phone, http.StatusCreated)
	// Its retry was due a second after the failure: the outbox, read from
	// the database file, says what the sender did with it then.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(e.cfg.DataDir, "parley.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var state string
	testkit.Eventually(t, 10*time.Second, func() bool {
		err := db.QueryRow(`SELECT state FROM push_outbox WHERE kind = 'open' AND endpoint LIKE ?`, "%/push/"+phone.ID).Scan(&state)
		return err == nil && state != "pending"
	}, "the phone's queued push handled")
	if n := svc.Attempts(phone); state != "dropped" || n != 1 {
		t.Fatalf("the signed-out phone's queued push is %s and was tried %d times in all (want dropped, after the one failure)", state, n)
	}
}

// Two screens turning on, at the same moment, one optional push each of the
// same device (finished turns on one, errors on the other) both count: a
// change names only its own push, and the store changes only that.
func TestDevicePushPrefsConcurrentChangesBothKept(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	phoneID, phoneTok := e.pair("phone")
	patch := func(body string) error {
		req, _ := http.NewRequest("PATCH", e.url()+"/api/devices/"+phoneID, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+phoneTok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("PATCH %s: %d", body, resp.StatusCode)
		}
		return nil
	}
	type view struct {
		ID         string
		PushTurns  bool `json:"push_turns"`
		PushErrors bool `json:"push_errors"`
	}
	for round := range 40 {
		if err := patch(`{"push_turns":false,"push_errors":false}`); err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		errs := make(chan error, 2)
		for _, body := range []string{`{"push_turns":true}`, `{"push_errors":true}`} {
			go func() {
				<-start
				errs <- patch(body)
			}()
		}
		close(start)
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		var list struct{ Devices []view }
		e.call("GET", "/api/devices", e.d.Token(), nil, &list)
		for _, d := range list.Devices {
			if d.ID == phoneID && (!d.PushTurns || !d.PushErrors) {
				t.Fatalf("round %d: after turning on turns and errors at once, the device has %+v: a change was lost", round, d)
			}
		}
	}
}

// A thread deleted while its permission card waits, after the card's push went
// out: the phone gets the closing push with the card's tag (the notification
// comes off), though the thread, its cards and its log are gone. Review B4:
// the delete took the push's outbox rows with it, so a closing push not sent
// by then never was. The phone's push service is down while the thread is
// deleted, so the closing push is still to send when the delete runs.
func TestPushClosedWhenThreadDeletedWithOpenCard(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	svc := e.pushService()
	_, phoneTok := e.pair("phone")
	phone := e.subscribe(svc, phoneTok)

	c := chatsock.Dial(t, e.url(), e.d.Token(), client.Options{Chat: "del", Since: -1})
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	c.Send(chatsock.Msg("m1", "permission Bash"))
	i := c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypePermissionRequest), "card")
	thread := c.Snapshot()[i].Thread
	tag := push.Tag(thread, chatsock.FieldOf(c.Snapshot()[i], "request_id").(string))
	svc.WaitFor(t, 10*time.Second, "the card's push", func(ps []webpushsvc.Push) bool { return len(webpushsvc.Messages[push.Message](ps, phone)) == 1 })

	svc.SetStatus(phone, http.StatusServiceUnavailable)
	var del struct{ Deleted bool }
	if st := e.api("DELETE", "/api/threads/"+string(thread), nil, &del); st != 200 || !del.Deleted {
		t.Fatalf("delete: %d %+v", st, del)
	}
	svc.SetStatus(phone, http.StatusCreated)
	ps := svc.WaitFor(t, 10*time.Second, "the closing push", func(ps []webpushsvc.Push) bool { return len(webpushsvc.Messages[push.Message](ps, phone)) == 2 })
	if m := webpushsvc.Messages[push.Message](ps, phone)[1]; m.Kind != "close" || m.Tag != tag {
		t.Fatalf("after the delete the phone got %+v, want the closing push tagged %s", m, tag)
	}
}
