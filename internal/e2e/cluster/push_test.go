//go:build e2e

package cluster_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/webpushsvc"
)

// call makes a JSON request to the parley at addr; it returns the status.
func call(t *testing.T, addr, method, path, token string, body, out any) int {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, "http://"+addr+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode == 200 {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

// procCluster is a hub that pushes to the Web Push stand-in and node b as
// two real `parley serve` processes with their own data directories, b
// running the real Claude Code.
type procCluster struct {
	a    agentSetup
	hub  *hubProc
	node *proc
}

func startProcCluster(t *testing.T) *procCluster {
	t.Helper()
	a := newAgentSetup(t)
	c := &procCluster{a: a, hub: startHubProc(t, a, true)}
	c.node = c.hub.join("b")
	c.hub.waitOnline(1)
	return c
}

// pair makes a device of the hub with its own token, as a phone pairs.
func (c *procCluster) pair(name string) string {
	t := c.hub.t
	t.Helper()
	var pc struct{ Code string }
	if st := call(t, c.hub.addr, "POST", "/api/pair-codes", c.hub.token, map[string]string{"name": name}, &pc); st != 200 {
		t.Fatalf("pair code: %d", st)
	}
	var out struct {
		Token string `json:"token"`
	}
	if st := call(t, c.hub.addr, "POST", "/api/pair", "", map[string]string{"code": pc.Code}, &out); st != 200 {
		t.Fatalf("pair %s: %d", name, st)
	}
	return out.Token
}

// A permission card opened by Claude Code on node b reaches the phone paired
// with the hub: one push saying who asks on which machine, for b's thread;
// none to the laptop that shows that thread at the hub. The hub is killed
// with kill -9 while the card is open and restarted (b's link comes back and
// writes its summaries again): no second push. The card answered on b's own
// socket (its terminal): a closing push with the card's tag.
func TestANodesCardPushesToTheHubsPhoneOnce(t *testing.T) {
	c := startProcCluster(t)
	svc := webpushsvc.Start(t)
	var key struct {
		PublicKey string `json:"public_key"`
	}
	if st := call(t, c.hub.addr, "GET", "/api/push/key", c.hub.token, nil, &key); st != 200 {
		t.Fatalf("push key: %d", st)
	}
	svc.ExpectKey(t, key.PublicKey)
	subscribe := func(token string) *webpushsvc.Sub {
		sub, js := svc.Subscribe(t)
		if st := call(t, c.hub.addr, "POST", "/api/push/subscriptions", token, json.RawMessage(js), nil); st != 200 {
			t.Fatalf("subscribe: %d", st)
		}
		return sub
	}
	phone := subscribe(c.pair("phone"))
	laptopTok := c.pair("laptop")
	laptop := subscribe(laptopTok)

	s := chatsock.Dial(t, "http://"+c.hub.addr, c.hub.token, client.Options{Chat: "desk"})
	s.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "replay_done")
	s.Send(newThreadMsg("m1", "hello", c.a.work))
	s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the first turn")
	remoteID := shownThread(s.Get(s.WaitFor(0, wait, func(e client.Event) bool { return shownThread(e) != "" }, "the route's thread")))
	_, local, _ := cluster.SplitRemoteID(remoteID)

	// The laptop shows b's thread at the hub: its socket is open on it and
	// its page said so.
	l := chatsock.Dial(t, "http://"+c.hub.addr, laptopTok, client.Options{Chat: "laptop", Thread: remoteID})
	l.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "the laptop's replay_done")
	if st := call(t, c.hub.addr, "POST", "/api/push/screen", laptopTok, map[string]string{"thread": string(remoteID)}, nil); st != 200 {
		t.Fatalf("screen: %d", st)
	}

	from := s.Len()
	s.Send(chatsock.Msg("m2", "make the file"))
	card := s.WaitFor(from, wait, chatsock.Type(chat.TypePermissionRequest), "the card at the hub")
	rid := fmt.Sprint(chatsock.FieldOf(s.Get(card), "request_id"))
	tag := push.Tag(remoteID, rid)
	ps := svc.WaitFor(t, wait, "the phone's push", func(ps []webpushsvc.Push) bool {
		return len(webpushsvc.Messages[push.Message](ps, phone)) == 1
	})
	m := webpushsvc.Messages[push.Message](ps, phone)[0]
	if m.Kind != "open" || m.Tag != tag || m.Title != "Claude Code on b" || m.Body != "asks for permission: Bash" ||
		m.Thread != string(remoteID) || !strings.Contains(m.URL, string(remoteID)) {
		t.Fatalf("the phone would show %+v", m)
	}

	// kill -9 the hub with the card open, once its outbox says the push
	// went (a kill between the service's answer and that record sends it
	// again, under the same tag and topic: at least once, by design);
	// restart it on the same listener.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(c.hub.data, "parley.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	testkit.Eventually(t, wait, func() bool {
		var state string
		err := db.QueryRow(`SELECT state FROM push_outbox WHERE kind = 'open' AND endpoint LIKE ?`, "%/push/"+phone.ID).Scan(&state)
		return err == nil && state == "sent"
	}, "the hub's outbox says the phone's push went")
	s.Client().Close()
	l.Client().Close()
	if err := c.hub.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.hub.cmd.Wait()
	c.hub.start()
	c.hub.waitOnline(1)

	// Answered on b's own socket.
	n := chatsock.Dial(t, "http://"+c.node.addr, c.node.token, client.Options{Chat: "terminal"})
	n.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "b's replay_done")
	n.Send(map[string]any{"type": "open_thread", "thread_id": string(local)})
	n.WaitFor(0, wait, func(e client.Event) bool { return shownThread(e) == local }, "b's terminal on the thread")
	n.Send(map[string]any{"type": "permission_response", "request_id": rid, "option_id": chat.OptionAllowOnce})
	n.WaitFor(0, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "the tool's turn done on b")
	ps = svc.WaitFor(t, wait, "the closing push", func(ps []webpushsvc.Push) bool {
		ms := webpushsvc.Messages[push.Message](ps, phone)
		return len(ms) > 0 && ms[len(ms)-1].Kind == "close"
	})
	ms := webpushsvc.Messages[push.Message](ps, phone)
	if len(ms) != 2 || ms[0].Tag != tag || ms[1].Tag != tag {
		t.Fatalf("the phone got %d pushes, want the card's open and its close: %s", len(ms), webpushsvc.Summary(ps))
	}
	if k := len(webpushsvc.Messages[push.Message](ps, laptop)); k != 0 {
		t.Fatalf("the laptop, which showed the thread, got %d pushes: %s", k, webpushsvc.Summary(ps))
	}
	if r := svc.Rejected(); len(r) != 0 {
		t.Fatalf("the push service refused pushes: %v", r)
	}
}
