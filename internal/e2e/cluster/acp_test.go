//go:build e2e

package cluster_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/testkit"
)

// acpConn is an ACP client on the hub's /ws/acp (what `parley acp` relays
// an editor's or a plugin's stdio to).
type acpConn struct {
	t    *testing.T
	ws   *websocket.Conn
	nc   interface{ Write([]byte) (int, error) }
	rd   *bufio.Scanner
	next int
}

func dialACP(t *testing.T, m *machine, query string) *acpConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+m.d.Addr()+"/ws/acp"+query, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + m.d.Token()}}})
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(32 << 20)
	nc := websocket.NetConn(context.Background(), ws, websocket.MessageText)
	t.Cleanup(func() { nc.Close() })
	sc := bufio.NewScanner(nc)
	sc.Buffer(make([]byte, 1<<20), 32<<20)
	return &acpConn{t: t, ws: ws, nc: nc, rd: sc}
}

// call sends a request and returns its result, answering nothing else
// (notifications are skipped).
func (c *acpConn) call(method string, params any) json.RawMessage {
	c.t.Helper()
	c.next++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.next, "method": method, "params": params})
	if _, err := c.nc.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	deadline := time.Now().Add(2 * wait)
	for time.Now().Before(deadline) && c.rd.Scan() {
		var msg struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(c.rd.Bytes(), &msg); err != nil {
			c.t.Fatalf("acp: %s: %v", c.rd.Bytes(), err)
		}
		if msg.ID == nil || *msg.ID != c.next || msg.Method != "" {
			continue
		}
		if msg.Error != nil {
			c.t.Fatalf("acp %s: %s", method, msg.Error)
		}
		return msg.Result
	}
	c.t.Fatalf("acp %s: no answer (%v)", method, c.rd.Err())
	return nil
}

// At the hub, the ACP side (`parley acp`, the IM plugins) lists every
// machine's agents, each with its machine, as /api/agents does; a session
// for agent claude@b starts its thread on b with its first prompt, and the
// turn's end comes back to the ACP client.
func TestTheHubsACPSideListsEveryMachinesAgentsAndStartsOnB(t *testing.T) {
	r := newRig(t)
	c := dialACP(t, r.hub, "?agent=claude@b")
	var init struct {
		Meta struct {
			Agents []chat.AgentInfo `json:"parley/agents"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}), &init); err != nil {
		t.Fatal(err)
	}
	var onB bool
	for _, a := range init.Meta.Agents {
		onB = onB || (a.ID == "claude" && a.Node == "b" && a.Status == "ready")
	}
	if !onB {
		t.Fatalf("the hub's ACP side lists %+v, want b's claude with its machine", init.Meta.Agents)
	}
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(c.call("session/new", map[string]any{"cwd": r.work, "mcpServers": []any{}}), &sess); err != nil {
		t.Fatal(err)
	}
	var res struct {
		StopReason string `json:"stopReason"`
	}
	if err := json.Unmarshal(c.call("session/prompt", map[string]any{"sessionId": sess.SessionID,
		"prompt": []map[string]any{{"type": "text", "text": "hello"}}}), &res); err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "end_turn" {
		t.Fatalf("the prompt ended %q, want end_turn", res.StopReason)
	}
	// b's summary of its new thread reaches the hub's directory after b's
	// commit, on its own.
	testkit.Eventually(t, wait, func() bool {
		ths, err := r.hub.d.ClusterHub().Threads(context.Background())
		if err != nil || len(ths) != 1 {
			return false
		}
		node, _, ok := cluster.SplitRemoteID(ths[0].Thread.ID)
		return ok && node == "b" && ths[0].Node == "b"
	}, "the hub's directory lists the thread on b")
}
