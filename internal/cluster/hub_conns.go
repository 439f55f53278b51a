package cluster

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// One live connection per node key. NATS lets a user's credentials open any
// number of connections, and a second one on a node's key reads that node's
// inputs and could answer its requests: a copy of its seed in other hands.
// The hub hears of every connection the server authorizes (the server's
// connect advisory, $SYS.ACCOUNT.$G.CONNECT, on a system-account connection
// of its own), and when a node's key has more than one it logs a WARN naming
// the node and keeps only the newest: the older one is closed when a short
// overlap ends (a node that reconnects after its link died is back at once,
// while the hub may not yet have seen the old link die), and any beyond two
// at once.

// DefaultReconnectOverlap is how long an older connection on a node's key
// stays once a newer one came: a node's link that is closing answers the
// reads on their way (readsDrainWait) and says goodbye within it.
const DefaultReconnectOverlap = readsDrainWait + 5*time.Second

// connectAdvisories is where the server says it authorized a connection of
// the global account, the one every user of the hub is in.
const connectAdvisories = "$SYS.ACCOUNT." + server.DEFAULT_GLOBAL_ACCOUNT + ".CONNECT"

// systemUser is the server's system account with its one user: the hub's
// own in-process connection, which may only hear connect advisories.
type systemUser struct {
	acc *server.Account
	key nkeys.KeyPair
}

func newSystemUser() (systemUser, error) {
	kp, err := nkeys.CreateUser() // in memory only: no one else ever holds it
	if err != nil {
		return systemUser{}, err
	}
	return systemUser{acc: server.NewAccount(server.DEFAULT_SYSTEM_ACCOUNT), key: kp}, nil
}

func (s systemUser) nkeyUser() *server.NkeyUser {
	pub, _ := s.key.PublicKey()
	return &server.NkeyUser{Nkey: pub, Account: s.acc,
		AllowedConnectionTypes: map[string]struct{}{inProcess: {}},
		Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Deny: []string{">"}},
			Subscribe: &server.SubjectPermission{Allow: []string{connectAdvisories}},
		}}
}

// inProcess is jwt.ConnectionTypeInProcess: a connection made in this
// process, never one from the network.
const inProcess = "IN_PROCESS"

// connGuard closes the extra connections on node keys.
type connGuard struct {
	h       *Hub
	overlap time.Duration
	nc      *nats.Conn

	mu     sync.Mutex
	closed bool
	ends   map[string]*time.Timer // node key → the end of its overlap
	warned map[string]uint64      // node key → the newest connection warned of
}

func startConnGuard(h *Hub) (*connGuard, error) {
	g := &connGuard{h: h, overlap: h.opt.ReconnectOverlap, ends: map[string]*time.Timer{}, warned: map[string]uint64{}}
	if g.overlap <= 0 {
		g.overlap = DefaultReconnectOverlap
	}
	pub, _ := h.sys.key.PublicKey()
	nc, err := nats.Connect("", nats.InProcessServer(h.srv), nats.Name("parley hub connections"),
		nats.Nkey(pub, h.sys.key.Sign), nats.MaxReconnects(-1))
	if err != nil {
		return nil, fmt.Errorf("cluster: the hub's system connection: %w", err)
	}
	g.nc = nc
	if _, err := nc.Subscribe(connectAdvisories, g.advisory); err != nil {
		nc.Close()
		return nil, err
	}
	if err := nc.Flush(); err != nil {
		nc.Close()
		return nil, err
	}
	return g, nil
}

func (g *connGuard) advisory(m *nats.Msg) {
	var ev server.ConnectEventMsg
	if err := json.Unmarshal(m.Data, &ev); err != nil || ev.Client.User == "" {
		return
	}
	g.check(ev.Client.User, false)
}

// check looks at a key's open connections: more than one on a node's key is
// warned of once for each newest; the older ones go at once when more than
// two, else when the overlap ends (overlapEnded). The server repeats its
// advisory for every live connection at each reload of its users (a join, a
// revoke): nothing here acts twice on one connection.
func (g *connGuard) check(key string, overlapEnded bool) {
	g.h.mu.Lock()
	m, ok := g.h.reg.withKey(key)
	g.h.mu.Unlock()
	if !ok {
		return // the admin, a joiner, or a node just revoked
	}
	cz, err := g.h.srv.Connz(&server.ConnzOptions{User: key, State: server.ConnOpen, Sort: server.ByCid, Limit: 1 << 16})
	if err != nil {
		return // the server is stopping
	}
	conns := cz.Conns
	if len(conns) < 2 {
		return
	}
	newest := conns[len(conns)-1]
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	fresh := g.warned[key] != newest.Cid
	if fresh {
		g.warned[key] = newest.Cid
		older := conns[len(conns)-2]
		g.h.log.Warn(fmt.Sprintf("cluster: a second connection on node %s's key, from %s; the older one (from %s) is closed in %s. "+
			"If %s did not just reconnect, its key is in other hands: `parley nodes revoke %s` on the hub, then join it again",
			m.Name, addrOf(newest), addrOf(older), g.overlap, m.Name, m.Name),
			"node", m.Name, "connections", len(conns), "newest", addrOf(newest), "older", addrOf(older))
	}
	keep := 2
	if overlapEnded {
		keep = 1
	}
	for _, c := range conns[:max(len(conns)-keep, 0)] {
		if err := g.h.srv.DisconnectClientByID(c.Cid); err == nil {
			g.h.log.Info("cluster: closed an older connection on a node's key", "node", m.Name, "from", addrOf(c))
		}
	}
	// The overlap runs from the newest connection's coming, not from an
	// advisory repeated at a reload.
	if fresh && !overlapEnded {
		if t := g.ends[key]; t != nil {
			t.Stop()
		}
		g.ends[key] = time.AfterFunc(g.overlap, func() { g.check(key, true) })
	}
}

func addrOf(c *server.ConnInfo) string { return fmt.Sprintf("%s:%d", c.IP, c.Port) }

// close stops the guard: no connection is closed after it returns.
func (g *connGuard) close() {
	g.mu.Lock()
	g.closed = true
	for _, t := range g.ends {
		t.Stop()
	}
	g.mu.Unlock()
	g.nc.Close()
}
