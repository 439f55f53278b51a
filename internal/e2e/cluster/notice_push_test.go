//go:build e2e

package cluster_test

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/webpushsvc"
)

// Claude Code on node b calls notify_person: the phone paired with the hub,
// with notices turned on, gets one push with the notice's words, for b's
// thread. The hub is killed with kill -9 once that push went and restarted
// (b's link comes back and tells its summaries again): the next notice is
// pushed, the first never again.
func TestANodesNoticePushesToTheHubsPhoneOnce(t *testing.T) {
	c := startProcCluster(t)
	svc := webpushsvc.Start(t)
	var key struct {
		PublicKey string `json:"public_key"`
	}
	if st := call(t, c.hub.addr, "GET", "/api/push/key", c.hub.token, nil, &key); st != 200 {
		t.Fatalf("push key: %d", st)
	}
	svc.ExpectKey(t, key.PublicKey)
	phoneTok := c.pair("phone")
	phone, js := svc.Subscribe(t)
	if st := call(t, c.hub.addr, "POST", "/api/push/subscriptions", phoneTok, json.RawMessage(js), nil); st != 200 {
		t.Fatalf("subscribe: %d", st)
	}
	var devs struct {
		Devices []struct {
			ID      string `json:"id"`
			Current bool   `json:"current"`
		} `json:"devices"`
	}
	if st := call(t, c.hub.addr, "GET", "/api/devices", phoneTok, nil, &devs); st != 200 {
		t.Fatalf("devices: %d", st)
	}
	id := ""
	for _, d := range devs.Devices {
		if d.Current {
			id = d.ID
		}
	}
	if st := call(t, c.hub.addr, "PATCH", "/api/devices/"+id, phoneTok, map[string]bool{"push_notices": true}, nil); id == "" || st != 200 {
		t.Fatalf("turn the phone's notices on (device %q): %d", id, st)
	}

	s := chatsock.Dial(t, "http://"+c.hub.addr, c.hub.token, client.Options{Chat: "desk"})
	s.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "replay_done")
	s.Send(newThreadMsg("m1", "tell the person", c.a.work))
	s.WaitFor(0, wait, chatsock.Type(chat.TypeNotice), "the notice at the hub")
	s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the turn")
	remoteID := shownThread(s.Get(s.WaitFor(0, wait, func(e client.Event) bool { return shownThread(e) != "" }, "the route's thread")))
	notices := func(ps []webpushsvc.Push) []push.Message {
		var out []push.Message
		for _, m := range webpushsvc.Messages[push.Message](ps, phone) {
			if m.Kind == store.PushNotice {
				out = append(out, m)
			}
		}
		return out
	}
	ps := svc.WaitFor(t, wait, "the phone's notice push", func(ps []webpushsvc.Push) bool { return len(notices(ps)) == 1 })
	if m := notices(ps)[0]; m.Body != "The build is green." || m.Thread != string(remoteID) || m.Title != "Claude Code on b" {
		t.Fatalf("the phone would show %+v", m)
	}

	db, err := sql.Open("sqlite", "file:"+filepath.Join(c.hub.data, "parley.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	testkit.Eventually(t, wait, func() bool {
		var state string
		err := db.QueryRow(`SELECT state FROM push_outbox WHERE kind = 'notice' AND endpoint LIKE ?`, "%/push/"+phone.ID).Scan(&state)
		return err == nil && state == "sent"
	}, "the hub's outbox says the notice's push went")
	s.Client().Close()
	if err := c.hub.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.hub.cmd.Wait()
	c.hub.start()
	c.hub.waitOnline(1)

	s = chatsock.Dial(t, "http://"+c.hub.addr, c.hub.token, client.Options{Chat: "desk"})
	s.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "replay_done after the restart")
	s.Send(chatsock.Msg("m2", "tell them again"))
	s.WaitFor(0, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "the second turn")
	ps = svc.WaitFor(t, wait, "the second notice's push", func(ps []webpushsvc.Push) bool {
		ns := notices(ps)
		return len(ns) > 0 && ns[len(ns)-1].Body == "The deploy is done."
	})
	if ns := notices(ps); len(ns) != 2 || ns[0].Body != "The build is green." {
		t.Fatalf("the phone got %d notice pushes, want each notice once: %s", len(ns), webpushsvc.Summary(ps))
	}
	if r := svc.Rejected(); len(r) != 0 {
		t.Fatalf("the push service refused pushes: %v", r)
	}
}
