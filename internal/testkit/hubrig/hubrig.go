// Package hubrig is a cluster for a package's own tests: a real hub (NATS
// with TLS, JetStream) in one data folder and nodes joined to it by a
// token, each linked and seen online, all closed with the test; the test's
// own handler serves on a node's link.
package hubrig

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/testkit"
)

// Rig is a hub and the folder of its data.
type Rig struct {
	Hub  *cluster.Hub
	Data string // the hub's data folder
	root string
}

// Start starts a hub on loopback, its data under a folder of the test's.
func Start(t *testing.T) *Rig {
	t.Helper()
	root := t.TempDir()
	r := &Rig{Data: filepath.Join(root, "hub"), root: root}
	h, err := cluster.StartHub(t.Context(), cluster.HubOptions{DataDir: r.Data, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	r.Hub = h
	return r
}

// Join joins machine name to the hub with a token of the hub's and returns
// its data folder (what the machine keeps of the cluster is there).
func (r *Rig) Join(t *testing.T, name string) string {
	t.Helper()
	data := filepath.Join(r.root, name)
	tok, err := cluster.IssueToken(r.Data, r.Hub.Addr(), name, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Join(t.Context(), data, tok, name, "test"); err != nil {
		t.Fatal(err)
	}
	return data
}

// Link links joined machine name (data: its folder) to the hub, a
// heartbeat every 2 s; serve, when set, is called on the link; then it
// waits until the hub lists the machine online.
func (r *Rig) Link(t *testing.T, name, data string, serve func(*cluster.Link) error) *cluster.Link {
	t.Helper()
	l, err := cluster.Dial(cluster.LinkOptions{DataDir: data, Hub: r.Hub.Addr(), Node: name, Heartbeat: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if serve != nil {
		if err := serve(l); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 60*time.Second, func() bool {
		nodes, err := r.Hub.Nodes(t.Context())
		if err != nil {
			return false
		}
		for _, n := range nodes {
			if n.Name == name {
				return n.Online
			}
		}
		return false
	}, "machine %s online at the hub", name)
	return l
}
