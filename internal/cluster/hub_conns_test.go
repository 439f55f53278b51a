package cluster

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/parleyhq/parley/internal/testkit"
)

// nodeConns lists the open connections on node's key at the hub, oldest first.
func nodeConns(t *testing.T, h *Hub, data string) []*server.ConnInfo {
	t.Helper()
	seed, err := os.ReadFile(filepath.Join(Dir(data), nodeSeed))
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeysFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := kp.PublicKey()
	cz, err := h.srv.Connz(&server.ConnzOptions{User: key, State: server.ConnOpen, Sort: server.ByCid, Limit: 1024})
	if err != nil {
		t.Fatal(err)
	}
	return cz.Conns
}

// A copy of a node's seed in other hands opens a second connection on its
// key: it would read the node's inputs. The hub says so in its log, naming
// the node, and keeps one connection: the node, whose link reconnects, ends
// up the only one, and the copy's connection is closed.
func TestASecondConnectionOnANodesKeyIsNamedAndClosed(t *testing.T) {
	t.Parallel()
	var log testkit.LockedBuffer
	h, err := StartHub(t.Context(), HubOptions{DataDir: t.TempDir(), Listen: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(&log, nil)), ReconnectOverlap: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	data := join(t, h, "vm")
	l := dial(t, data, h.Addr(), "vm")
	waitFor(t, 10*time.Second, "the link up", l.Connected)
	if strings.Contains(log.String(), "a second connection") {
		t.Fatalf("one connection was warned of:\n%s", log.String())
	}

	errs := make(chan error, 16)
	copyConn, err := connectAs(t, data, h.Addr(), "vm", errs)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a WARN naming the node", func() bool {
		return strings.Contains(log.String(), "level=WARN") && strings.Contains(log.String(), "a second connection on node vm's key")
	})
	select {
	case err := <-errs:
		if err != errClosed {
			t.Fatalf("the second connection got %v, want it closed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the second connection on vm's key is still open: connected %v", copyConn.IsConnected())
	}
	// The node's link, closed once as the older, came back and is the only one.
	waitFor(t, 30*time.Second, "the node's link alone on its key", func() bool {
		return l.Connected() && len(nodeConns(t, h, data)) == 1
	})
	if n, _ := status(t, h, "vm"); n.Name != "vm" {
		t.Fatalf("vm is no longer listed: %+v", n)
	}
}

// Any number of connections on one key (200 were taken before): the hub
// keeps the newest only.
func TestManyConnectionsOnANodesKeyLeaveOnlyTheNewest(t *testing.T) {
	t.Parallel()
	h, err := StartHub(t.Context(), HubOptions{DataDir: t.TempDir(), Listen: "127.0.0.1:0", ReconnectOverlap: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	data := join(t, h, "b")
	const n = 20
	errs := make(chan error, 2*n)
	for range n {
		if _, err := connectAs(t, data, h.Addr(), "b", errs); err != nil {
			t.Fatal(err)
		}
	}
	newest := nodeConns(t, h, data)
	if len(newest) == 0 {
		t.Fatal("no connection on b's key is open")
	}
	last := newest[len(newest)-1].Cid
	closed := 0
	for closed < n-1 {
		select {
		case err := <-errs:
			if err == errClosed {
				closed++
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d extra connections on b's key were closed; open: %d", closed, n-1, len(nodeConns(t, h, data)))
		}
	}
	// The server tears a closed connection down after its client hears it.
	waitFor(t, 10*time.Second, "only the newest open on b's key", func() bool {
		open := nodeConns(t, h, data)
		return len(open) == 1 && open[0].Cid == last
	})
}
