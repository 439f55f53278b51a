package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/internal/testkit"
)

// Every test here runs a real embedded NATS server with JetStream and real
// TLS on loopback, and real clients with the node's own credentials.

func startHub(t *testing.T, data, listen string) *Hub {
	t.Helper()
	h, err := StartHub(t.Context(), HubOptions{DataDir: data, Listen: listen})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func token(t *testing.T, h *Hub, node string, ttl time.Duration) string {
	t.Helper()
	tok, err := IssueToken(h.opt.DataDir, h.AdvertiseAddr(), node, time.Now().Add(ttl))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// join makes a node's data directory and joins it as name.
func join(t *testing.T, h *Hub, name string) string {
	t.Helper()
	data := t.TempDir()
	if _, err := Join(t.Context(), data, token(t, h, "", time.Minute), name, "test"); err != nil {
		t.Fatalf("join %s: %v", name, err)
	}
	return data
}

func dial(t *testing.T, data, hub, name string) *Link {
	t.Helper()
	l, err := Dial(LinkOptions{DataDir: data, Hub: hub, Node: name, Version: "v-test", Agents: []string{"claude"},
		Heartbeat: testHeartbeat})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// waitFor polls a condition (as nats-server's checkFor does); it fails the
// test if the condition does not hold within d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func status(t *testing.T, h *Hub, name string) (NodeStatus, bool) {
	t.Helper()
	nodes, err := h.Nodes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Name == name {
			return n, true
		}
	}
	return NodeStatus{}, false
}

var errClosed = errors.New("connection closed")

// connectAs opens a raw connection with a node's real key, reporting the
// errors NATS sends it (permission violations) on errs.
func connectAs(t *testing.T, data, hub, name string, errs chan<- error) (*nats.Conn, error) {
	t.Helper()
	auth, err := nats.NkeyOptionFromSeed(filepath.Join(Dir(data), nodeSeed))
	if err != nil {
		t.Fatal(err)
	}
	tlsConf, err := caTLS(filepath.Join(Dir(data), hubCAFile))
	if err != nil {
		t.Fatal(err)
	}
	opts := []nats.Option{auth, nats.Secure(tlsConf), nats.CustomInboxPrefix(inboxPrefix(name)), nats.NoReconnect(),
		nats.Timeout(10 * time.Second)}
	if errs != nil {
		opts = append(opts,
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }),
			nats.ClosedHandler(func(*nats.Conn) { errs <- errClosed }))
	}
	nc, err := nats.Connect("tls://"+hub, opts...)
	if err == nil {
		t.Cleanup(nc.Close)
	}
	return nc, err
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestJoinLinksANodeThatTheHubListsOnline(t *testing.T) {
	t.Parallel()
	hubData := t.TempDir()
	h := startHub(t, hubData, "127.0.0.1:0")
	for _, f := range []string{caKeyFile, hubKeyFile, adminSeed, joinKeyFile} {
		if m := mode(t, filepath.Join(Dir(hubData), f)); m != 0o600 {
			t.Errorf("hub %s: mode %v, want 0600", f, m)
		}
	}
	if _, err := os.Stat(filepath.Join(hubData, "nats", "jetstream")); err != nil {
		t.Errorf("JetStream's files are not under <data>/nats: %v", err)
	}

	nodeData := t.TempDir()
	c, err := Join(t.Context(), nodeData, token(t, h, "laptop", time.Minute), "", "test")
	if err != nil {
		t.Fatal(err)
	}
	if c.Node != "laptop" || c.Hub != h.Addr() {
		t.Errorf("join answered %+v, want node laptop at %s", c, h.Addr())
	}
	if m := mode(t, filepath.Join(Dir(nodeData), nodeSeed)); m != 0o600 {
		t.Errorf("node seed: mode %v, want 0600", m)
	}
	if n, ok := status(t, h, "laptop"); !ok || n.Online {
		t.Fatalf("after join, before serve: %+v %v; want listed, offline", n, ok)
	}

	l := dial(t, nodeData, c.Hub, "laptop")
	waitFor(t, 10*time.Second, "the node online at the hub", func() bool {
		n, _ := status(t, h, "laptop")
		return n.Online
	})
	n, _ := status(t, h, "laptop")
	if n.Version != "v-test" || len(n.Agents) != 1 || n.Agents[0] != "claude" || n.Since.IsZero() {
		t.Errorf("status %+v: want version v-test, agents [claude], a since", n)
	}
	// A node that stops says so: offline at once, since its last word.
	l.Close()
	n, _ = status(t, h, "laptop")
	if n.Online || n.Since.IsZero() {
		t.Errorf("after the node stopped: %+v, want offline with a since", n)
	}
}

func TestAUsedExpiredOrAlteredJoinTokenIsRefused(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	other := startHub(t, t.TempDir(), "127.0.0.1:0")

	tok := token(t, h, "", time.Minute)
	if _, err := Join(t.Context(), t.TempDir(), tok, "first", "test"); err != nil {
		t.Fatal(err)
	}
	claims, payload, sig, err := ParseToken(tok)
	if err != nil {
		t.Fatal(err)
	}
	// The same claims, a different node: the MAC no longer matches.
	claims.Node = "intruder"
	altered, _ := json.Marshal(claims)
	alteredTok := tokenPrefix + base64.RawURLEncoding.EncodeToString(altered) + "." + base64.RawURLEncoding.EncodeToString(sig)
	sig[0] ^= 1
	badMAC := tokenPrefix + payload + "." + base64.RawURLEncoding.EncodeToString(sig)
	// A token another hub made, pointed at this hub with this hub's CA pinned.
	foreign := token(t, other, "", time.Minute)
	fc, _, _, _ := ParseToken(foreign)
	fc.Hub, fc.CA, fc.Pass = claims.Hub, claims.CA, claims.Pass
	otherKey, _ := joinKey(Dir(other.opt.DataDir))
	foreignTok, _ := signClaims(otherKey, fc)
	expired, err := IssueToken(h.opt.DataDir, h.Addr(), "", time.Now().Add(-time.Second))
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, tok, node, want string
	}{
		{"used", tok, "second", ErrTokenUsed.Error()},
		{"expired", expired, "late", ErrTokenExpired.Error()},
		{"altered claims", alteredTok, "intruder", ErrTokenInvalid.Error()},
		{"altered MAC", badMAC, "third", ErrTokenInvalid.Error()},
		{"another hub's", foreignTok, "fourth", ErrTokenInvalid.Error()},
		{"truncated", tok[:len(tok)-10], "fifth", ErrTokenInvalid.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			_, err := Join(t.Context(), data, tc.tok, tc.node, "test")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("join with a %s token: %v, want %q", tc.name, err, tc.want)
			}
			if _, ok := status(t, h, tc.node); ok {
				t.Errorf("the hub registered %q", tc.node)
			}
			if _, err := os.Stat(filepath.Join(Dir(data), nodeSeed)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused join kept a key: %v", err)
			}
		})
	}

	// A token pinned to another CA is refused by the node before it says anything.
	fcl, _, _, _ := ParseToken(foreign)
	fcl.Hub = h.Addr()
	pinnedElsewhere, _ := signClaims(otherKey, fcl)
	if _, err := Join(t.Context(), t.TempDir(), pinnedElsewhere, "sixth", "test"); err == nil || !strings.Contains(err.Error(), "not the one the token names") {
		t.Fatalf("join pinned to another CA: %v, want the CA refused", err)
	}
}

// A machine joining under the hub's own name would show as one machine with
// both machines' agents, and a thread started "there" would run on the hub.
func TestANodeCannotJoinUnderTheHubsOwnName(t *testing.T) {
	t.Parallel()
	h, err := StartHub(t.Context(), HubOptions{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Self: "studio"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	_, err = Join(t.Context(), t.TempDir(), token(t, h, "", time.Minute), "studio", "test")
	if err == nil || !strings.Contains(err.Error(), "the hub's own machine name") {
		t.Fatalf("join as the hub's own name: %v, want it refused", err)
	}
	if _, ok := status(t, h, "studio"); ok {
		t.Error("the hub registered a node under its own name")
	}
	join(t, h, "laptop") // another name joins
}

func TestARevokedNodeIsCutOffAtOnce(t *testing.T) {
	t.Parallel()
	hubData := t.TempDir()
	h := startHub(t, hubData, "127.0.0.1:0")
	data := join(t, h, "vm")
	errs := make(chan error, 16)
	nc, err := connectAs(t, data, h.Addr(), "vm", errs)
	if err != nil {
		t.Fatal(err)
	}
	l := dial(t, data, h.Addr(), "vm")
	waitFor(t, 10*time.Second, "the link up", l.Connected)

	adm, err := DialAdmin(hubData)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.Revoke(t.Context(), "vm"); err != nil {
		t.Fatal(err)
	}
	// When Revoke returns, the server holds no connection of the node's.
	pub, _ := os.ReadFile(filepath.Join(Dir(data), nodeSeed))
	kp, _ := nkeysFromSeed(pub)
	key, _ := kp.PublicKey()
	cz, err := h.srv.Connz(&server.ConnzOptions{Username: true, Limit: 1024})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cz.Conns {
		if c.AuthorizedUser == key {
			t.Fatalf("connection %d of the revoked node is still open", c.Cid)
		}
	}
	// The client hears it: its connection is closed by the hub.
	select {
	case err := <-errs:
		if err != errClosed {
			t.Errorf("the node's connection got %v, want it closed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the node's live connection was not closed: connected %v", nc.IsConnected())
	}
	waitFor(t, 10*time.Second, "the link down", func() bool { return !l.Connected() })
	if _, err := connectAs(t, data, h.Addr(), "vm", nil); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("connect with the revoked key: %v, want %v", err, nats.ErrAuthorization)
	}
	if _, ok := status(t, h, "vm"); ok {
		t.Error("the revoked node is still listed")
	}
	if err := adm.Revoke(t.Context(), "vm"); err == nil || !strings.Contains(err.Error(), "no such node") {
		t.Errorf("revoking it again: %v, want no such node", err)
	}
	// Its name is free again: a new join (a new key) works.
	join(t, h, "vm")
}

func TestANodeCannotTouchAnotherNodesSubjectsOrKeys(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	dataA, dataB := join(t, h, "a"), join(t, h, "b")
	errs := make(chan error, 64)
	a, err := connectAs(t, dataA, h.Addr(), "a", errs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := connectAs(t, dataB, h.Addr(), "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	jsA, _ := jetstream.New(a)
	ctx := t.Context()
	record(t, b, dirSubject("b"), `{"node":"b"}`)
	record(t, a, dirSubject("a"), `{"node":"a"}`)
	// The hub listens where b publishes, and where it sends b requests.
	watch, err := h.nc.SubscribeSync(FromSubject("b") + ".>")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.nc.Flush(); err != nil {
		t.Fatal(err)
	}

	violation := func(what, subject string) {
		t.Helper()
		for {
			select {
			case err := <-errs:
				if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), `"`+subject+`"`) {
					return
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: NATS did not refuse %s", what, subject)
			}
		}
	}

	// Publish on b's event subject.
	if err := a.Publish(FromSubject("b")+".t.x.ev", []byte("forged")); err != nil {
		t.Fatal(err)
	}
	violation("publish as b", FromSubject("b")+".t.x.ev")
	// b's own event comes next; the forged one never arrived.
	if err := b.Publish(FromSubject("b")+".t.x.ev", []byte("real")); err != nil {
		t.Fatal(err)
	}
	m, err := watch.NextMsg(10 * time.Second)
	if err != nil || string(m.Data) != "real" {
		t.Fatalf("the hub saw %v %v on b's subject, want only b's own event", m, err)
	}

	// Write b's directory key.
	shortCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = jsA.Publish(shortCtx, DirectoryKey("b"), []byte(`{"node":"b","version":"forged"}`))
	cancel()
	if err == nil {
		t.Fatal("a wrote b's directory key")
	}
	violation("write b's key", DirectoryKey("b"))
	e, err := h.nodes.Get(ctx, "b")
	if err != nil || string(e.Value()) != `{"node":"b"}` {
		t.Fatalf("b's record is %q %v, want b's own", e.Value(), err)
	}
	// b's thread summaries, b's inputs, the admin requests, and every $KV
	// key, a's own too (the hub writes them, hub_records.go).
	for _, subj := range []string{"$KV." + threadsBucket + ".b.t1", InputSubject("b") + ".t1", adminRevoke, joinSubject,
		DirectoryKey("a"), "$KV." + threadsBucket + ".a.t1", CopySubject("b", "t1"), CopySubject("a", "t1")} {
		if err := a.Publish(subj, []byte(`{"node":"b"}`)); err != nil {
			t.Fatal(err)
		}
		violation("publish", subj)
	}
	if _, ok := status(t, h, "b"); !ok {
		t.Fatal("b was revoked by a")
	}
	// Subscribe to what b receives or sends.
	for _, subj := range []string{ToSubject("b") + ".>", FromSubject("b") + ".>", "$KV." + nodesBucket + ".>", ">",
		copyPrefix("b") + ".>", copyPrefix("a") + ".>",
		inboxPrefix("b") + ".>", hubInbox + ".>", adminInbox + ".>", joinInbox + ".>"} {
		if _, err := a.Subscribe(subj, func(*nats.Msg) {}); err != nil {
			t.Fatal(err)
		}
		violation("subscribe", subj)
	}
	// Its own subjects stay open: a answers the hub's replay request to a…
	if _, err := a.Subscribe(ToSubject("a")+".t.x.replay", func(m *nats.Msg) {
		m.Respond(append([]byte("events after "), m.Data...))
	}); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if m, err := h.nc.Request(ToSubject("a")+".t.x.replay", []byte("3"), 10*time.Second); err != nil || string(m.Data) != "events after 3" {
		t.Fatalf("a answering its own replay request: %v %v", m, err)
	}
	// …and has the hub write its own thread summary.
	record(t, a, sumSubject("a", "t1"), `{"id":"t1","title":"x"}`)
}

// record sends a node's record or summary as the node does (Link.publishRecord)
// and fails unless the hub wrote it.
func record(t *testing.T, nc *nats.Conn, subject, value string) {
	t.Helper()
	m, err := nc.Request(subject, []byte(value), 10*time.Second)
	if err != nil || len(m.Data) != 0 {
		t.Fatalf("%s: the hub answered %v %v, want it written", subject, m, err)
	}
}

// The cluster protocol decides, not the version string: a node on another
// parley version but the hub's protocol links in silence; one a protocol
// before or after links, named in the log once; one two apart is refused
// with the reason, in the hub's log (once) and in the answer the node reads
// (whose header names the hub's protocol: the node closes its link), and its
// summaries are refused until a record the hub takes. A joiner two apart is
// refused before its token is used.
func TestTheHubTakesNodesOneProtocolApartAndRefusesFurther(t *testing.T) {
	t.Parallel()
	var log testkit.LockedBuffer
	h, err := StartHub(t.Context(), HubOptions{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Version: "v2",
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	data := join(t, h, "b")
	errs := make(chan error, 16)
	b, err := connectAs(t, data, h.Addr(), "b", errs)
	if err != nil {
		t.Fatal(err)
	}
	rec := func(proto int, version string) string {
		return `{"node":"b","version":"` + version + `","protocol":` + strconv.Itoa(proto) + `}`
	}
	record(t, b, dirSubject("b"), rec(Protocol(), "v2"))
	record(t, b, dirSubject("b"), rec(Protocol(), "v1-dev"))
	if strings.Contains(log.String(), "cluster protocol") {
		t.Fatalf("a node on the hub's protocol was logged:\n%s", log.String())
	}
	for _, p := range []int{Protocol() - 1, Protocol() + 1} {
		record(t, b, dirSubject("b"), rec(p, "v-other"))
		record(t, b, dirSubject("b"), rec(p, "v-other"))
		want := "node b speaks cluster protocol " + strconv.Itoa(p) + " (parley v-other) and this hub " + strconv.Itoa(Protocol())
		if n := strings.Count(log.String(), want); n != 1 {
			t.Fatalf("the hub logged %d times %q, want once:\n%s", n, want, log.String())
		}
	}
	// A record without a protocol is of protocol 1, the one before numbers.
	if Protocol() == 2 {
		record(t, b, dirSubject("b"), `{"node":"b","version":"v1"}`)
	}
	kept, err := h.nodes.Get(t.Context(), "b")
	if err != nil {
		t.Fatal(err)
	}

	far := Protocol() + 2
	m, err := b.Request(dirSubject("b"), []byte(rec(far, "v9")), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := "the hub speaks cluster protocol " + strconv.Itoa(Protocol()) + " (parley v2) and node b " + strconv.Itoa(far) + " (parley v9)"
	if !strings.Contains(string(m.Data), want) || !strings.Contains(string(m.Data), "upgrade the hub") {
		t.Fatalf("the hub answered %q to a node two protocols ahead, want %q and what to upgrade", m.Data, want)
	}
	if m.Header.Get(hdrProtocol) != strconv.Itoa(Protocol()) {
		t.Fatalf("the hub's answer names protocol %q, want %d", m.Header.Get(hdrProtocol), Protocol())
	}
	// Nor its thread summaries, until a record the hub takes.
	sum := sumSubject("b", "t1")
	if m, err := b.Request(sum, []byte(`{"id":"t1","title":"x"}`), 10*time.Second); err != nil || !strings.Contains(string(m.Data), "cluster protocol was refused") {
		t.Fatalf("a summary of the refused node: %v %v, want refused", m, err)
	}
	if m, err := b.Request(dirSubject("b"), []byte(rec(far, "v9")), 10*time.Second); err != nil || len(m.Data) == 0 {
		t.Fatalf("the refused node's record again: %v %v, want refused", m, err)
	}
	if n := strings.Count(log.String(), "level=ERROR msg=\"cluster: link refused: "+want); n != 1 {
		t.Fatalf("the hub logged the refusal %d times, want once:\n%s", n, log.String())
	}
	if e, err := h.nodes.Get(t.Context(), "b"); err != nil || e.Revision() != kept.Revision() {
		t.Fatalf("the refused record was written: %v %v", e, err)
	}
	record(t, b, dirSubject("b"), rec(Protocol(), "v2"))
	record(t, b, sum, `{"id":"t1","title":"x"}`)

	// A joiner two protocols ahead: refused, its token still good.
	tok := token(t, h, "", time.Minute)
	claims, _, _, err := ParseToken(tok)
	if err != nil {
		t.Fatal(err)
	}
	jc, err := nats.Connect("tls://"+claims.Hub, nats.Secure(pinnedTLS(claims.CA, func([]byte) {})),
		nats.UserInfo(joinUser, claims.Pass), nats.CustomInboxPrefix(joinInbox), nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	defer jc.Close()
	req, _ := json.Marshal(joinRequest{Token: tok, Node: "new", Key: nodeKey(t), Version: "v9", Protocol: far})
	var ans answer
	if err := request(t.Context(), jc, joinSubject, req, &ans); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ans.Error, "node new "+strconv.Itoa(far)+" (parley v9)") || !strings.Contains(ans.Error, "upgrade the hub") {
		t.Fatalf("a joiner two protocols ahead: %+v, want refused", ans)
	}
	if _, err := Join(t.Context(), t.TempDir(), tok, "now", "v2"); err != nil {
		t.Fatalf("the refused joiner's token: %v", err)
	}
}

// nodeKey is a fresh nkey user public key.
func nodeKey(t *testing.T) string {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	return pub
}

func TestTheHubRestartKeepsItsNodesKeysAndUsedTokens(t *testing.T) {
	hubData := t.TempDir()
	h := startHub(t, hubData, "127.0.0.1:0")
	addr := h.Addr()
	tok := token(t, h, "", time.Minute)
	nodeData := t.TempDir()
	if _, err := Join(t.Context(), nodeData, tok, "ws", "test"); err != nil {
		t.Fatal(err)
	}
	l := dial(t, nodeData, addr, "ws")
	waitFor(t, 10*time.Second, "the node online", func() bool { n, _ := status(t, h, "ws"); return n.Online })
	before, _ := status(t, h, "ws")
	caBefore, _ := os.ReadFile(filepath.Join(Dir(hubData), caCertFile))

	h.Close()
	waitFor(t, 10*time.Second, "the link to notice the hub went", func() bool { return !l.Connected() })
	h2 := startHub(t, hubData, addr)
	caAfter, _ := os.ReadFile(filepath.Join(Dir(hubData), caCertFile))
	if string(caBefore) != string(caAfter) {
		t.Fatal("the hub made a new CA at restart")
	}
	// Before the node is back, the directory still knows it (JetStream on disk).
	n, ok := status(t, h2, "ws")
	if !ok || n.Joined != before.Joined || n.Version != "v-test" {
		t.Fatalf("after restart: %+v %v, want the node as before (%+v)", n, ok, before)
	}
	// The same link, the same key, reconnects by itself and heartbeats again.
	waitFor(t, 60*time.Second, "the link back", l.Connected)
	waitFor(t, 10*time.Second, "a fresh heartbeat", func() bool {
		n, _ := status(t, h2, "ws")
		return n.Online && n.LastSeen.After(before.LastSeen)
	})
	// The used token stays used.
	if _, err := Join(t.Context(), t.TempDir(), tok, "ws2", "test"); err == nil || !strings.Contains(err.Error(), ErrTokenUsed.Error()) {
		t.Fatalf("reusing the token after restart: %v, want %v", err, ErrTokenUsed)
	}
}

// A restarted hub lists a machine offline, last seen as before, until the
// machine writes to it again: the records it loads from disk were said to the
// hub that is gone, and the machine may still be on its way back (its
// threads unreadable, a chat opened on one silent). Here b went away while
// the hub was down (no goodbye reached it), with a heartbeat long enough that
// its last record would still count it online.
func TestARestartedHubListsItsMachinesOfflineUntilTheyWriteAgain(t *testing.T) {
	hubData := t.TempDir()
	h, err := StartHub(t.Context(), HubOptions{DataDir: hubData, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	addr := h.Addr()
	data := join(t, h, "b")
	opt := LinkOptions{DataDir: data, Hub: addr, Node: "b", Version: "v-test", Heartbeat: time.Minute}
	l, err := Dial(opt)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "b online", func() bool { n, _ := status(t, h, "b"); return n.Online })
	before, _ := status(t, h, "b")

	h.Close()
	waitFor(t, 10*time.Second, "b's link to notice the hub went", func() bool { return !l.Connected() })
	l.Close() // b stops while the hub is down: its goodbye reaches nobody
	h2 := startHub(t, hubData, addr)
	n, ok := status(t, h2, "b")
	if !ok || n.Online || !n.LastSeen.Equal(before.LastSeen) || !n.Since.Equal(before.LastSeen) {
		t.Fatalf("after the restart: %+v %v; want b offline, last seen and since %v", n, ok, before.LastSeen)
	}

	// b comes back: its first record makes it online.
	changed := h2.MachinesChanged()
	l2, err := Dial(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("the hub did not say b came back")
	}
	waitFor(t, 10*time.Second, "b online again", func() bool { n, _ := status(t, h2, "b"); return n.Online })
	if n, _ := status(t, h2, "b"); !n.LastSeen.After(before.LastSeen) {
		t.Fatalf("b back: last seen %v, want after %v", n.LastSeen, before.LastSeen)
	}
}

// Inputs waiting for a node that is away are bounded: past the bound the hub's
// publish is refused (the sender can say so), and none already taken is dropped.
func TestInputsWaitingForANodeAreBoundedAndNeverDropped(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	join(t, h, "away")
	ctx := t.Context()
	// In batches the client's async window holds, each acknowledged before the next.
	for i := range MaxWaitingInputs {
		if _, err := h.js.PublishAsync(InputSubject("away")+".t1", []byte("x"), jetstream.WithMsgID(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
		if (i+1)%1000 == 0 {
			select {
			case <-h.js.PublishAsyncComplete():
			case <-time.After(60 * time.Second):
				t.Fatal("the inputs were not acknowledged")
			}
		}
	}
	_, err := h.js.Publish(ctx, InputSubject("away")+".t1", []byte("one too many"), jetstream.WithMsgID("over"))
	if err == nil {
		t.Fatal("the hub took an input past the bound")
	}
	s, err := h.js.Stream(ctx, InputStream("away"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != MaxWaitingInputs || info.State.FirstSeq != 1 {
		t.Fatalf("the stream holds %d inputs from seq %d, want %d from 1 (nothing dropped)", info.State.Msgs, info.State.FirstSeq, MaxWaitingInputs)
	}
}

func TestAHubOnATakenPortSaysSo(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = StartHub(t.Context(), HubOptions{DataDir: t.TempDir(), Listen: ln.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("a hub on a taken port: %v, want address already in use", err)
	}
}

// Every token carries the join user's password, so anyone who saw one (used,
// expired) can send join requests. The hub answers with its own rights, so it
// answers only to a joiner's inbox: a request naming a node's directory key or
// input stream as its reply subject is not answered there. And a node record
// that is not a record hides no other node from the list.
func TestTheHubAnswersAJoinRequestOnlyToAJoinersInbox(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	dataB := join(t, h, "b")
	b, err := connectAs(t, dataB, h.Addr(), "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	record(t, b, dirSubject("b"), `{"node":"b","version":"real"}`)
	used := token(t, h, "", time.Minute)
	if _, err := Join(ctx, t.TempDir(), used, "first", "test"); err != nil {
		t.Fatal(err)
	}
	claims, _, _, err := ParseToken(used)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect("tls://"+claims.Hub, nats.Secure(pinnedTLS(claims.CA, func([]byte) {})),
		nats.UserInfo(joinUser, claims.Pass), nats.NoReconnect())
	if err != nil {
		t.Fatalf("the join user with a used token's password: %v", err)
	}
	defer nc.Close()
	for _, reply := range []string{DirectoryKey("b"), InputSubject("b") + ".t1"} {
		if err := nc.PublishRequest(joinSubject, reply, []byte(`{"token":"forged"}`)); err != nil {
			t.Fatal(err)
		}
	}
	// Answered in order: a real joiner's request after those is answered, so
	// the hub has handled them when it is.
	if _, err := Join(ctx, t.TempDir(), token(t, h, "", time.Minute), "second", "test"); err != nil {
		t.Fatal(err)
	}
	e, err := h.nodes.Get(ctx, "b")
	if err != nil || string(e.Value()) != `{"node":"b","version":"real"}` {
		t.Fatalf("b's record is %q (%v): the hub answered into it", e.Value(), err)
	}
	if info, err := h.js.Stream(ctx, InputStream("b")); err != nil || info.CachedInfo().State.Msgs != 0 {
		t.Fatalf("b's input stream: %v, %+v: the hub answered into it", err, info)
	}

	// b sends garbage as its record, or a record of another node: the hub
	// refuses both and keeps b's; the list still shows every node.
	for _, bad := range []string{`not json`, `{"node":"first"}`} {
		if m, err := b.Request(dirSubject("b"), []byte(bad), 10*time.Second); err != nil || len(m.Data) == 0 {
			t.Fatalf("b's record %s: answered %v %v, want refused", bad, m, err)
		}
	}
	if e, err := h.nodes.Get(ctx, "b"); err != nil || string(e.Value()) != `{"node":"b","version":"real"}` {
		t.Fatalf("b's record is %q (%v) after garbage", e.Value(), err)
	}
	nodes, err := h.Nodes(ctx)
	if err != nil || len(nodes) != 3 {
		t.Fatalf("nodes: %v, %v; want all three listed", nodes, err)
	}
}

// A join token lives at most MaxTokenTTL: the record of its use is kept a
// little longer, so a longer-lived one could be used again after it is gone.
func TestAJoinTokenLivesAtMostADay(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	if _, err := IssueToken(h.opt.DataDir, h.Addr(), "", time.Now().Add(MaxTokenTTL+time.Hour)); err == nil {
		t.Fatal("a token for longer than a day was made")
	}
	c, _, _, err := ParseToken(token(t, h, "", time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	c.Expires = time.Now().Add(MaxTokenTTL + time.Hour).Unix()
	key, err := joinKey(Dir(h.opt.DataDir))
	if err != nil {
		t.Fatal(err)
	}
	long, _ := signClaims(key, c)
	if _, err := Join(t.Context(), t.TempDir(), long, "long", "test"); err == nil || !strings.Contains(err.Error(), ErrTokenInvalid.Error()) {
		t.Fatalf("join with a signed token living past a day: %v, want it refused", err)
	}
}

// testHeartbeat is the tests' node heartbeat. A node counts online while its
// last heartbeat is younger than OfflineAfter of them: at 200 ms one late beat
// on a loaded machine (GC, -race, load 20) turned a node offline mid-test.
// Offline is tested by a clean stop, which says so at once.
const testHeartbeat = 2 * time.Second

// JetStream reserves each node's input bound ([cluster] input_bytes) out of
// the hub's store (the disk free at its start, or store_bytes): with room for
// two, two machines join and the third is refused with words that say why
// and what to change, and reserves nothing.
func TestAHubWithNoRoomForAnotherMachineSaysSo(t *testing.T) {
	t.Parallel()
	const input = 16 << 20
	// The thread summaries' 256 MiB, two machines' inputs, and half a third's.
	h, err := StartHub(t.Context(), HubOptions{DataDir: t.TempDir(), Listen: "127.0.0.1:0",
		InputBytes: input, StoreBytes: 256<<20 + 2*input + input/2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	join(t, h, "b")
	join(t, h, "c")
	s, err := h.js.Stream(t.Context(), InputStream("b"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config.MaxBytes; got != input {
		t.Fatalf("b's inputs are bounded at %d bytes, want the hub's input_bytes %d", got, input)
	}
	_, err = Join(t.Context(), t.TempDir(), token(t, h, "", time.Minute), "d", "test")
	if err == nil || !strings.Contains(err.Error(), "no room at the hub for another machine's inputs") ||
		!strings.Contains(err.Error(), "lower input_bytes") {
		t.Fatalf("a third machine joined a hub with room for two: %v", err)
	}
	if _, ok := status(t, h, "d"); ok {
		t.Fatal("the refused machine is listed")
	}
	if _, err := h.js.Stream(t.Context(), InputStream("d")); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("the refused machine's input stream: %v, want none", err)
	}
}

// A hub restarted on a fuller disk (or with a smaller store_bytes) may find
// its machines' bookings past its budget: it starts all the same, every
// joined machine keeps its inputs (one waiting is delivered), and only a new
// booking, a machine joining, is refused with the words that say why.
func TestAHubWhoseBookingsNoLongerFitStartsAndKeepsItsMachines(t *testing.T) {
	const input = 64 << 20
	hubData := t.TempDir()
	h, err := StartHub(t.Context(), HubOptions{DataDir: hubData, Listen: "127.0.0.1:0", InputBytes: input})
	if err != nil {
		t.Fatal(err)
	}
	addr := h.Addr()
	bData := join(t, h, "b")
	join(t, h, "c")
	if err := h.Queue(t.Context(), "b", "t1", "m1", []byte("waited")); err != nil {
		t.Fatal(err)
	}
	h.Close()

	// Booked: the summaries' 256 MiB and two machines' 64 MiB; the budget now
	// less, and input_bytes raised, which would book more still.
	const budget = 320 << 20
	reg := prometheus.NewRegistry()
	h2, err := StartHub(t.Context(), HubOptions{DataDir: hubData, Listen: addr, InputBytes: 2 * input, StoreBytes: budget,
		Registerer: reg})
	if err != nil {
		t.Fatalf("the hub did not start with its bookings past its budget: %v", err)
	}
	t.Cleanup(h2.Close)
	s, err := h2.js.Stream(t.Context(), InputStream("b"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config.MaxBytes; got != input {
		t.Fatalf("b's inputs are bounded at %d bytes, want %d kept (input_bytes raised past the budget)", got, input)
	}
	// /metrics says what is booked and what may be.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	gauge := map[string]float64{}
	for _, mf := range mfs {
		if m := mf.GetMetric(); len(m) == 1 && m[0].GetGauge() != nil {
			gauge[mf.GetName()] = m[0].GetGauge().GetValue()
		}
	}
	if gauge["parley_cluster_store_booked_bytes"] != 256<<20+2*input || gauge["parley_cluster_store_budget_bytes"] != budget {
		t.Fatalf("store gauges %v, want booked %d, budget %d", gauge, 256<<20+2*input, budget)
	}
	keepsBAndRefusesANewJoin(t, h2, bData, addr)

	// What the refusal says to do: input_bytes lowered, the hub restarted.
	h2.Close()
	const lower = 16 << 20
	h3, err := StartHub(t.Context(), HubOptions{DataDir: hubData, Listen: addr, InputBytes: lower, StoreBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h3.Close)
	if booked, _ := h3.StoreUse(); booked != 256<<20+2*lower {
		t.Fatalf("booked %d MiB after input_bytes was lowered, want %d", booked>>20, (256<<20+2*lower)>>20)
	}
	join(t, h3, "d")
}

// The same with the default store_bytes = 0, the budget 3/4 of the disk
// free: a hub restarted on a fuller disk starts, and a machine's waiting
// input is delivered (JetStream's own default budget could not be raised).
func TestAHubOnAFullerDiskStartsWithTheDefaultBudget(t *testing.T) {
	const input = 64 << 20
	free := func(n int64) {
		was := diskFree
		diskFree = func(string) (int64, error) { return n, nil }
		t.Cleanup(func() { diskFree = was })
	}
	free(1 << 30)
	hubData := t.TempDir()
	h, err := StartHub(t.Context(), HubOptions{DataDir: hubData, Listen: "127.0.0.1:0", InputBytes: input})
	if err != nil {
		t.Fatal(err)
	}
	if _, budget := h.StoreUse(); budget != 768<<20 {
		t.Fatalf("budget %d MiB with 1 GiB free, want 3/4 of it", budget>>20)
	}
	addr := h.Addr()
	bData := join(t, h, "b")
	join(t, h, "c")
	if err := h.Queue(t.Context(), "b", "t1", "m1", []byte("waited")); err != nil {
		t.Fatal(err)
	}
	h.Close()

	free(64 << 20) // booked: 256 MiB of summaries and two machines' 64 MiB
	h2, err := StartHub(t.Context(), HubOptions{DataDir: hubData, Listen: addr, InputBytes: input})
	if err != nil {
		t.Fatalf("the hub did not start on a fuller disk with store_bytes 0: %v", err)
	}
	t.Cleanup(h2.Close)
	if booked, budget := h2.StoreUse(); booked != 256<<20+2*input || budget >= booked {
		t.Fatalf("booked %d MiB of a budget of %d MiB, want 384 MiB past the budget", booked>>20, budget>>20)
	}
	keepsBAndRefusesANewJoin(t, h2, bData, addr)
}

// keepsBAndRefusesANewJoin checks a hub restarted past its disk budget: b,
// joined before, gets the input m1 that waited for it, and a new machine's
// join is refused for want of room.
func keepsBAndRefusesANewJoin(t *testing.T, h *Hub, bData, addr string) {
	t.Helper()
	a := newApplied()
	dialWith(t, bData, addr, "b", a.handler(nil))
	if id := a.next(t); id != "m1" {
		t.Fatalf("b got %q, want its waiting input m1", id)
	}
	_, err := Join(t.Context(), t.TempDir(), token(t, h, "", time.Minute), "d", "test")
	if err == nil || !strings.Contains(err.Error(), "no room at the hub for another machine's inputs") {
		t.Fatalf("a machine joined a hub already past its budget: %v", err)
	}
}

// A node whose record the hub did not take (a hub just restarted answers
// records only once its directory is loaded) writes it again within seconds,
// not a heartbeat later: until then the hub lists it offline.
func TestARecordTheHubDidNotTakeIsWrittenAgainSoon(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	data := join(t, h, "b")
	h.refuseRecords.Store(2)
	l, err := Dial(LinkOptions{DataDir: data, Hub: h.Addr(), Node: "b", Version: "v-test", Heartbeat: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	waitFor(t, 15*time.Second, "b online after two refused records (its heartbeat is a minute)", func() bool {
		n, _ := status(t, h, "b")
		return n.Online
	})
	if n := h.refuseRecords.Load(); n != 0 {
		t.Fatalf("%d refusals left: b's records never reached the hub", n)
	}
}

// Every token carries the one join user's password, so whoever holds any
// token, used or expired, may subscribe where every joiner's answer comes
// (_JOIN_INBOX.>). What it reads there says nothing: each answer is sealed
// to the joiner that asked, which still reads its own, a success as a refusal.
func TestAJoinTokenHolderCannotReadAnotherJoinersAnswer(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	used := token(t, h, "", time.Minute)
	if _, err := Join(t.Context(), t.TempDir(), used, "first", "test"); err != nil {
		t.Fatal(err)
	}
	claims, _, _, err := ParseToken(used)
	if err != nil {
		t.Fatal(err)
	}
	spy, err := nats.Connect("tls://"+claims.Hub, nats.Secure(pinnedTLS(claims.CA, func([]byte) {})),
		nats.UserInfo(joinUser, claims.Pass), nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Close()
	read, err := spy.SubscribeSync(joinInbox + ".>")
	if err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}

	if _, err := Join(t.Context(), t.TempDir(), token(t, h, "", time.Minute), "secret-laptop", "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := Join(t.Context(), t.TempDir(), token(t, h, "", time.Minute), "first", "test"); err == nil ||
		!strings.Contains(err.Error(), `a node named "first" has already joined`) {
		t.Fatalf("a join under a taken name: %v, want the hub's refusal read by the joiner", err)
	}
	for i := range 2 {
		m, err := read.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("answer %d: %v (the spy should see it go by, sealed)", i, err)
		}
		var ans answer
		if err := json.Unmarshal(m.Data, &ans); err != nil {
			t.Fatal(err)
		}
		if ans.Result != nil || ans.Error != "" || len(ans.Sealed) == 0 ||
			strings.Contains(string(m.Data), "secret-laptop") || strings.Contains(string(m.Data), "first") {
			t.Fatalf("a join-token holder read another joiner's answer: %s", m.Data)
		}
	}
}

// A socket at the hub's listener that sends bytes that are not TLS, one that
// never starts its TLS handshake, and one that finishes it but never says
// who it is: the server closes each (TLSTimeout, its auth timeout), so
// nothing holds a connection without a key.
func TestGarbageAndIdleSocketsAreClosed(t *testing.T) {
	t.Parallel()
	hubData := t.TempDir()
	h := startHub(t, hubData, "127.0.0.1:0")
	closedByHub := func(what string, c net.Conn) {
		t.Helper()
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		buf := make([]byte, 4096)
		for {
			_, err := c.Read(buf)
			if err == nil {
				continue
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("%s: the hub kept the socket open", what)
			}
			return // closed (EOF, reset, or a TLS alert then EOF)
		}
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", h.Addr())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	garbage := dial()
	if _, err := garbage.Write([]byte("PUB parley.join 5\r\nhello\r\n\x00\x01\x02 not TLS at all\r\n")); err != nil {
		t.Fatal(err)
	}
	closedByHub("garbage", garbage)
	closedByHub("a socket that never starts TLS", dial())

	conf, err := caTLS(filepath.Join(Dir(hubData), caCertFile))
	if err != nil {
		t.Fatal(err)
	}
	raw := dial()
	// The server speaks first, in clear (INFO), then the client starts TLS.
	raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	info, err := bufio.NewReader(raw).ReadString('\n')
	if err != nil || !strings.HasPrefix(info, "INFO ") {
		t.Fatalf("the hub's first line: %q %v", info, err)
	}
	tc := tls.Client(raw, conf)
	if err := tc.HandshakeContext(t.Context()); err != nil {
		t.Fatalf("TLS with the hub's CA: %v", err)
	}
	closedByHub("a TLS socket that never sends CONNECT", tc)
}
