package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/chat"
)

// HubOptions configure the hub.
type HubOptions struct {
	DataDir string
	// Listen is the NATS listener's host:port (port 0: any free port).
	Listen string
	// Advertise is the address written into join tokens; "" means the
	// listening address.
	Advertise string
	Logger    *slog.Logger
	// Registerer receives the per-node link metrics; nil skips them.
	Registerer prometheus.Registerer
	// InputWait is how long an input waits for its node before it fails
	// (0: DefaultInputWait).
	InputWait time.Duration
	// InputBytes is the most a node's waiting inputs may weigh (0:
	// DefaultInputBytes). JetStream reserves it on the hub's disk for each
	// node, out of StoreBytes (hub_store.go).
	InputBytes int64
	// StoreBytes is the most the hub's JetStream may reserve on its disk
	// for new bookings (0: 3/4 of the disk free at the hub's start,
	// JetStream's default); what is booked already is kept (hub_store.go).
	StoreBytes int64
	// CopyBytes and CopyAge bound the hub's copy of each node's recent
	// events (hub_copy.go; 0: DefaultCopyBytes, DefaultCopyAge); CopyBytes is
	// booked on the hub's disk per node, as InputBytes is.
	CopyBytes int64
	CopyAge   time.Duration
	// InputFailed, when set, is told of each input that will never be
	// applied, with the reason (hub_inputs.go). It runs on the node's forwarder,
	// whose next inputs wait for it, or in Revoke (each input that waited
	// for the machine revoked): it must be quick, and must not call Revoke
	// or Close (which wait for that forwarder).
	InputFailed InputFailed
	// ThreadGone, when set, is told of each node's thread deleted on its
	// node, once the hub no longer lists it (hub_records.go), with its remote
	// id: the hub's routes to it and views of it end. It runs on the
	// records' subscription: it must be quick.
	ThreadGone func(chat.ThreadID)
	// Self is the hub machine's own node name ([cluster] node): no node may
	// join under it, or the one view would show two machines as one.
	Self string
	// Version is the hub's parley version, named in the log and in a
	// refusal next to its cluster protocol (protocol.go), which decides.
	Version string
	// ReconnectOverlap is how long an older connection on a node's key
	// stays once a newer one came (0: DefaultReconnectOverlap; hub_conns.go).
	ReconnectOverlap time.Duration
	// Audit records machines joined and revoked (hub_audit.go); nil records nothing.
	Audit audit.Log
}

// Hub is the embedded NATS server with JetStream, its users made from the
// registry, and the hub's own connection answering joins and admin requests.
type Hub struct {
	// refuseRecords makes the hub refuse the next n directory records, as
	// one restarting does before it answers them (tests only: nothing sets
	// it outside this package's tests).
	refuseRecords atomic.Int32

	opt  HubOptions
	dir  string
	log  *slog.Logger
	auth *authority
	key  []byte // the join-token key
	// joinHash is the bcrypt hash of the join user's password, so the server
	// holds no plain password. The password is 256 random bits (an HMAC), not
	// guessable at any cost, so the hash takes bcrypt's least cost.
	joinHash string
	adm      nkeys.KeyPair
	// sys is the server's system account and the hub's user in it, which
	// hears of every connection (hub_conns.go); guard acts on what it hears.
	sys   systemUser
	guard *connGuard

	srv   *server.Server
	nc    *nats.Conn
	js    jetstream.JetStream
	nodes jetstream.KeyValue
	used  jetstream.KeyValue
	// threads is the directory's thread summaries, <node>.<thread>.
	threads jetstream.KeyValue
	// records and summaries are the nodes and threads buckets in memory
	// (hub_mirror.go): the directory's readers read them.
	records   *mirror[Record]
	summaries *mirror[RemoteThread]
	online    *onlineWatch
	// copy is the hub's copy of the nodes' recent events (hub_copy.go).
	copy *hubCopy

	// Lock order (docs/locks.md): members, then copy.mu, then book, then mu;
	// wmu is a leaf. members and book are held across waits (a forwarder's
	// end; JetStream's answers): mu is taken by every sender (Nodes, away),
	// which must never wait for a node's hand-over or for JetStream.
	//
	// members serializes the changes of membership (join, revoke, close)
	// from first check to last effect, waits for forwarders included.
	members sync.Mutex
	// book serializes the bookings of the hub's disk: from the budget's check
	// (bookable) to the stream made with that bound (a node's inputs at its
	// join or the hub's start, a node's copy at its first event).
	book sync.Mutex
	// mu guards reg, refused, every change of the server's users (reload),
	// fwd and closed.
	mu  sync.Mutex
	reg registry
	// refused holds the nodes whose last directory record the hub refused
	// for its protocol: their thread summaries are refused too (hub_records.go).
	refused map[string]bool
	fwd     map[string]*forwarder // each joined node's input forwarder
	closed  bool                  // Close began: no forwarder starts

	// wmu guards waiters: senders waiting for their input's end (Request).
	// A leaf: nothing else is locked under it.
	wmu     sync.Mutex
	waiters map[string]chan inputResult

	// failed holds the ids of the last inputs that failed, so that a retry
	// under the same id within the stream's duplicate window goes in
	// (Queue). Its own lock is a leaf.
	failed *idSet

	// budget is what the hub's disk bookings may add up to (hub_store.go), as
	// made of store_bytes at this start; storeMax is the
	// server's JetStreamMaxStore, raised past budget to keep what is
	// booked already. Both are set in StartHub, then only read.
	budget, storeMax int64

	// loadedRev is the nodes bucket's revision as this hub loaded it at its
	// start: a record at or below it was stored by a previous run (only the
	// hub writes the bucket, and only after that load), so it tells when the
	// node was last seen, never that it is online. Set in connect, then only
	// read.
	loadedRev uint64

	// otherProtocol is each node's protocol and version last logged, as its
	// protocol differs from the hub's; only the directory records'
	// subscription touches it.
	otherProtocol map[string]string
}

// StartHub starts the server, makes the buckets, and answers joins and admin
// requests until Close.
func StartHub(ctx context.Context, opt HubOptions) (*Hub, error) {
	if opt.InputWait <= 0 {
		opt.InputWait = DefaultInputWait
	}
	if opt.InputBytes <= 0 {
		opt.InputBytes = DefaultInputBytes
	}
	if opt.CopyBytes <= 0 {
		opt.CopyBytes = DefaultCopyBytes
	}
	if opt.CopyAge <= 0 {
		opt.CopyAge = DefaultCopyAge
	}
	h := &Hub{opt: opt, dir: Dir(opt.DataDir), log: opt.Logger, fwd: map[string]*forwarder{},
		waiters: map[string]chan inputResult{}, failed: newIDSet(4096),
		otherProtocol: map[string]string{}, refused: map[string]bool{}}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.log = h.log.With("component", "cluster-hub")
	var err error
	if h.auth, err = loadOrCreateAuthority(h.dir); err != nil {
		return nil, err
	}
	if h.key, err = joinKey(h.dir); err != nil {
		return nil, fmt.Errorf("cluster: join key: %w", err)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(joinPass(h.key)), bcrypt.MinCost)
	if err != nil {
		return nil, err
	}
	h.joinHash = string(hash)
	if h.adm, err = loadOrCreateSeed(filepath.Join(h.dir, adminSeed)); err != nil {
		return nil, fmt.Errorf("cluster: admin key: %w", err)
	}
	if h.sys, err = newSystemUser(); err != nil {
		return nil, err
	}
	if h.reg, err = loadRegistry(h.dir); err != nil {
		return nil, err
	}
	if h.storeMax, err = startMaxStore(opt); err != nil {
		return nil, err
	}
	opts, err := h.serverOptions(h.reg)
	if err != nil {
		return nil, err
	}
	// The server reports a taken port only to its log, after a wait; ask first.
	probe, err := net.Listen("tcp", opt.Listen)
	if err != nil {
		return nil, fmt.Errorf("cluster: listen %s: %w", opt.Listen, err)
	}
	probe.Close()
	if h.srv, err = server.NewServer(opts); err != nil {
		return nil, fmt.Errorf("cluster: NATS server: %w", err)
	}
	logger := &natsLogger{log: h.log}
	h.srv.SetLoggerV2(logger, false, false, false)
	h.srv.Start()
	if !h.srv.ReadyForConnections(30 * time.Second) {
		h.srv.Shutdown()
		return nil, fmt.Errorf("cluster: the NATS server did not start on %s%s", opt.Listen, logger.why())
	}
	if err := h.keepBookings(); err != nil {
		h.Close()
		return nil, err
	}
	if err := h.connect(ctx); err != nil {
		h.Close()
		return nil, err
	}
	// The listener as bound (0.0.0.0 stays 0.0.0.0: join-token must not
	// mistake it for an address other machines can dial).
	if err := writeFile(filepath.Join(h.dir, addrFile), []byte(h.srv.Addr().String()+"\n"), 0o600); err != nil {
		h.Close()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if opt.Registerer != nil {
		if err := opt.Registerer.Register(hubCollector{h}); err != nil {
			h.Close()
			return nil, err
		}
	}
	h.log.Info("cluster hub is listening", "addr", h.srv.Addr().String(), "nodes", len(h.reg.Nodes),
		"store_booked_bytes", h.booked(), "store_budget_bytes", h.budget)
	return h, nil
}

// serverOptions are the whole server configuration for a registry; a change
// of registry reloads the server with new options.
func (h *Hub) serverOptions(reg registry) (*server.Options, error) {
	host, portStr, err := net.SplitHostPort(h.opt.Listen)
	if err != nil {
		return nil, fmt.Errorf("cluster: listen %q: %w", h.opt.Listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("cluster: listen %q: bad port", h.opt.Listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	admPub, _ := h.adm.PublicKey()
	users := []*server.NkeyUser{{Nkey: admPub}, h.sys.nkeyUser()} // the hub itself and `parley nodes`: everything
	for _, m := range reg.Nodes {
		users = append(users, &server.NkeyUser{Nkey: m.Key, Permissions: nodePermissions(m.Name)})
	}
	return &server.Options{
		ServerName: "parley-hub",
		Host:       host,
		Port:       port,
		NoSigs:     true,
		NoLog:      true,
		JetStream:  true,
		StoreDir:   storeDir(h.opt.DataDir),
		TLSConfig:  h.auth.serverTLS(),
		TLSTimeout: 5,
		Nkeys:      users,
		Users:      []*server.User{{Username: joinUser, Password: h.joinHash, Permissions: joinPermissions()}},
		// The same account each reload: the server keeps its state.
		Accounts:      []*server.Account{h.sys.acc},
		SystemAccount: h.sys.acc.Name,
		// A node's frames are parley's (a message is at most 16 MiB; events far less).
		MaxPayload: maxPayload,
		// store_bytes (0: 3/4 of the disk free at start, never JetStream's
		// own), or what the joined machines already book when that is more
		// (hub_store.go).
		JetStreamMaxStore: h.storeMax,
	}, nil
}

func (h *Hub) connect(ctx context.Context) error {
	pub, _ := h.adm.PublicKey()
	nc, err := nats.Connect("", nats.InProcessServer(h.srv), nats.Name("parley hub"),
		nats.Nkey(pub, h.adm.Sign), nats.MaxReconnects(-1), nats.CustomInboxPrefix(hubInbox))
	if err != nil {
		return fmt.Errorf("cluster: the hub's own connection: %w", err)
	}
	h.nc = nc
	if h.guard, err = startConnGuard(h); err != nil {
		return err
	}
	if h.js, err = jetstream.New(nc); err != nil {
		return err
	}
	h.copy = newHubCopy(h)
	if h.nodes, err = h.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: nodesBucket, Description: "parley nodes: each node's heartbeat record", History: 1, Storage: jetstream.FileStorage,
		MaxValueSize: maxRecord,
	}); err != nil {
		return fmt.Errorf("cluster: bucket %s: %w", nodesBucket, err)
	}
	if h.threads, err = h.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: threadsBucket, Description: "parley thread summaries, each node's under <node>.", History: 1, Storage: jetstream.FileStorage,
		// Bounded: nodes write here, and the hub's disk is its store's too.
		MaxValueSize: maxRecord, MaxBytes: 256 << 20,
	}); err != nil {
		return fmt.Errorf("cluster: bucket %s: %w", threadsBucket, err)
	}
	if h.records, err = startMirror(ctx, h.nodes, h.log, decodeRecord); err != nil {
		return fmt.Errorf("cluster: load bucket %s: %w", nodesBucket, err)
	}
	h.loadedRev = h.records.revision() // before serveRecords: nothing written yet

	if h.summaries, err = startMirror(ctx, h.threads, h.log, decodeSummary); err != nil {
		return fmt.Errorf("cluster: load bucket %s: %w", threadsBucket, err)
	}
	h.online = startOnlineWatch(h)
	if err := h.serveRecords(h.threads); err != nil {
		return err
	}
	if h.used, err = h.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: usedBucket, Description: "ids of used join tokens", History: 1, Storage: jetstream.FileStorage,
		TTL: MaxTokenTTL + time.Hour, // a token expires before its record
	}); err != nil {
		return fmt.Errorf("cluster: bucket %s: %w", usedBucket, err)
	}
	// Nothing changes the membership yet: the join and revoke handlers are
	// subscribed below.
	h.mu.Lock()
	nodes := slices.Clone(h.reg.Nodes)
	h.mu.Unlock()
	for _, m := range nodes {
		if err := h.ensureInputs(ctx, m.Name, true); err != nil {
			return err
		}
	}
	h.mu.Lock()
	for _, m := range nodes {
		h.startForwarder(m.Name)
	}
	h.mu.Unlock()
	for subj, route := range map[string]struct {
		handle func(context.Context, []byte) answer
		inbox  string // where its answers may go: the requester's own inbox kind
	}{
		joinSubject: {h.answerJoin, joinInbox}, adminNodes: {plain(h.handleNodes), adminInbox}, adminRevoke: {plain(h.handleRevoke), adminInbox},
	} {
		handle, inbox := route.handle, route.inbox
		if _, err := nc.Subscribe(subj, func(m *nats.Msg) {
			// The requester names the reply subject, and the hub answers with
			// its own rights: answering anywhere else would let the join
			// user (whose password every token carries) make the hub write
			// a node's directory key or input stream.
			if !strings.HasPrefix(m.Reply, inbox+".") {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			b, _ := json.Marshal(handle(ctx, m.Data))
			if err := m.Respond(b); err != nil {
				h.log.Warn("cluster: could not answer", "subject", subj, "err", err)
			}
		}); err != nil {
			return err
		}
	}
	return nc.Flush()
}

// ensureInputs makes node's input stream and the hub's consumer of it, which
// hands the node its inputs one at a time, in order (hub_inputs.go). At the hub's
// start the consumer is made afresh: an input a previous run was handing
// over when it died is still unacked, and the new consumer starts at it at
// once instead of after the old delivery's ack wait. It takes h.book; h.mu
// must not be held (senders would wait for JetStream).
func (h *Hub) ensureInputs(ctx context.Context, node string, fresh bool) error {
	h.book.Lock()
	defer h.book.Unlock()
	bound, err := h.inputBound(ctx, node)
	if err != nil {
		return fmt.Errorf("cluster: stream for node %s: %w", node, err)
	}
	s, err := h.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: InputStream(node), Description: "inputs waiting for node " + node,
		Subjects: []string{InputSubject(node) + ".>"}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Duplicates: 10 * time.Minute,
		// Bounded: a node away for long makes the hub refuse (never drop) more.
		MaxMsgs: MaxWaitingInputs, MaxBytes: bound, Discard: jetstream.DiscardNew,
	})
	if err != nil {
		return fmt.Errorf("cluster: stream for node %s: %w", node, h.noRoom(err))
	}
	if fresh {
		if err := s.DeleteConsumer(ctx, inputConsumer); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return fmt.Errorf("cluster: consumer for node %s: %w", node, err)
		}
	}
	if _, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: inputConsumer, AckPolicy: jetstream.AckExplicitPolicy,
		MaxAckPending: 1, AckWait: inputAckWait,
	}); err != nil {
		return fmt.Errorf("cluster: consumer for node %s: %w", node, err)
	}
	return nil
}

// The bounds of a node's input stream: past them a publish is refused, so
// the sender can say the input was not taken. Its bytes are
// HubOptions.InputBytes.
const (
	MaxWaitingInputs  = 10_000
	DefaultInputBytes = 64 << 20
)

// Conn is the hub's own connection (for the route follower's seam).
func (h *Hub) Conn() *nats.Conn { return h.nc }

// JetStream is the hub's JetStream context.
func (h *Hub) JetStream() jetstream.JetStream { return h.js }

// answer is the reply to a join or admin request. A join's is sealed to
// the joiner (hub_join.go): Sealed holds the answer, From the hub's key for it.
type answer struct {
	Result any    `json:"result,omitempty"`
	Error  string `json:"error,omitempty"`
	Sealed []byte `json:"sealed,omitempty"`
	From   string `json:"from,omitempty"`
}

// plain answers a request with a handler's result or error.
func plain(handle func(context.Context, []byte) (any, error)) func(context.Context, []byte) answer {
	return func(ctx context.Context, data []byte) answer {
		v, err := handle(ctx, data)
		if err != nil {
			return answer{Error: err.Error()}
		}
		return answer{Result: v}
	}
}

// apply saves a registry and reloads the server's users from it; NATS closes
// at once the connections of users no longer in it. h.mu must be held.
func (h *Hub) apply(next registry) error {
	if err := next.save(h.dir); err != nil {
		return fmt.Errorf("save the registry: %w", err)
	}
	opts, err := h.serverOptions(next)
	if err != nil {
		return err
	}
	if err := h.srv.ReloadOptions(opts); err != nil {
		// The file now says next; put it back so the file and the server agree.
		if serr := h.reg.save(h.dir); serr != nil {
			h.log.Error("cluster: registry and server disagree", "err", serr)
		}
		return fmt.Errorf("reload the server's users: %w", err)
	}
	h.reg = next
	// Which machines are joined decides which summaries are listed.
	h.summaries.touchAll()
	return nil
}

type revokeRequest struct {
	Node string `json:"node"`
}

func (h *Hub) handleRevoke(ctx context.Context, data []byte) (any, error) {
	var req revokeRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, errors.New("a revoke request must be JSON")
	}
	return nil, h.Revoke(ctx, req.Node)
}

// ErrNoNode says no joined node has that name.
var ErrNoNode = errors.New("no such node")

// Revoke removes a node's user (its live connections are closed by the
// reload), its directory record, its thread summaries, its input stream and
// the hub's copy of its events.
func (h *Hub) Revoke(ctx context.Context, node string) error {
	h.members.Lock()
	defer h.members.Unlock()
	h.mu.Lock()
	if _, ok := h.reg.find(node); !ok {
		h.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrNoNode, node)
	}
	at := time.Now()
	if err := h.apply(h.reg.without(node, at)); err != nil {
		h.mu.Unlock()
		return err
	}
	delete(h.refused, node)
	f := h.takeForwarder(node)
	h.mu.Unlock()
	// Waited for outside mu: senders read the nodes meanwhile.
	f.close()
	// What waits for it is failed, each with the reason, before its stream
	// goes: their senders were told only that they wait.
	if err := h.failWaiting(ctx, node, f, (&NotJoinedError{Node: node, Revoked: at}).Error()); err != nil {
		h.log.Warn("cluster: fail the inputs waiting for the revoked node", "node", node, "err", err)
	}
	if err := h.nodes.Purge(ctx, node); err != nil {
		h.log.Warn("cluster: purge the revoked node's record", "node", node, "err", err)
	}
	if err := h.purgeThreads(ctx, node); err != nil {
		h.log.Warn("cluster: purge the revoked node's thread summaries", "node", node, "err", err)
	}
	if err := h.js.DeleteStream(ctx, InputStream(node)); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		h.log.Warn("cluster: delete the revoked node's inputs", "node", node, "err", err)
	}
	if err := h.copy.drop(ctx, node); err != nil {
		h.log.Warn("cluster: delete the hub's copy of the revoked node's events", "node", node, "err", err)
	}
	// Returned, the directory no longer lists it.
	if err := errors.Join(h.records.sync(ctx), h.summaries.sync(ctx)); err != nil {
		h.log.Warn("cluster: the directory's copy is behind", "node", node, "err", err)
	}
	h.log.Info("cluster: node revoked", "node", node)
	h.record(ctx, audit.KindMachineRevoke, node, "", "machine "+node+" revoked", map[string]string{"machine": node})
	return nil
}

func (h *Hub) handleNodes(ctx context.Context, _ []byte) (any, error) { return h.Machines(ctx) }

// Nodes lists the joined nodes with what their directory records say (from
// the hub's copy in memory: no NATS call).
func (h *Hub) Nodes(context.Context) ([]NodeStatus, error) {
	h.mu.Lock()
	members := h.reg.Nodes
	h.mu.Unlock()
	now := time.Now()
	out := make([]NodeStatus, 0, len(members))
	for _, m := range members {
		st := NodeStatus{Name: m.Name, Joined: m.Joined}
		if r, ok := h.records.get(m.Name); ok { // else joined, never heard from
			st.fill(r.val, r.at, r.rev > h.loadedRev, now)
		}
		out = append(out, st)
	}
	return out, nil
}

// Addr is the address the hub listens on, dialable (an unspecified host is
// the loopback).
func (h *Hub) Addr() string { return dialable(h.srv.Addr().String()) }

// dialable makes a listening address one to dial from this machine: an
// unspecified host becomes the loopback.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err == nil && (host == "" || ip != nil && ip.IsUnspecified()) {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// ListenAddr is the address the hub of dataDir last listened on, as bound
// ("" when no hub has run there).
func ListenAddr(dataDir string) string {
	b, err := os.ReadFile(filepath.Join(Dir(dataDir), addrFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// AdvertiseAddr is the address join tokens carry.
func (h *Hub) AdvertiseAddr() string {
	if h.opt.Advertise != "" {
		return h.opt.Advertise
	}
	return h.Addr()
}

// Close stops the forwarders, the hub's connection and the server. Inputs
// being handed over stay in their streams and come again after a restart.
func (h *Hub) Close() {
	h.members.Lock()
	h.mu.Lock()
	h.closed = true
	var fs []*forwarder
	for node := range h.fwd {
		fs = append(fs, h.takeForwarder(node))
	}
	h.mu.Unlock()
	for _, f := range fs {
		f.close()
	}
	h.members.Unlock()
	if h.online != nil {
		h.online.close()
	}
	if h.records != nil {
		h.records.close()
	}
	if h.summaries != nil {
		h.summaries.close()
	}
	if h.guard != nil {
		h.guard.close()
	}
	if h.nc != nil {
		h.nc.Close()
	}
	if h.srv != nil {
		h.srv.Shutdown()
		h.srv.WaitForShutdown()
	}
}

// loadOrCreateSeed reads an nkey user seed file, making it (0600) if absent.
func loadOrCreateSeed(path string) (nkeys.KeyPair, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return nil, err
		}
		seed, _ := kp.Seed()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, err
		}
		return kp, writeFile(path, append(seed, '\n'), 0o600)
	}
	if err != nil {
		return nil, err
	}
	return nkeys.ParseDecoratedNKey(data)
}
