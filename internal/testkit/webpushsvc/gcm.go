package webpushsvc

// Chromium's push service, played on loopback: Chromium subscribes through
// Google's GCM (a check-in, a registration, then a long-lived MCS connection
// the pushes arrive on), and its command line can name other endpoints for
// all three (--gcm-checkin-url, --gcm-registration-url, --gcm-mcs-endpoint).
// GCM answers them as Google's servers do, so the dashboard's real
// pushManager.subscribe() succeeds, and forwards each push parley sends to
// the subscription's endpoint (https://jmt17.google.com/fcm/send/<token> or
// https://fcm.googleapis.com/…, as Chromium makes it) over MCS to that
// browser, still encrypted: the browser decrypts it and its service worker
// shows it. The pushes are checked as Service checks them (VAPID, headers);
// only the browser holds the keys to read them.
//
// parley reaches the endpoint's Google host through Proxy (an HTTP CONNECT
// proxy that leads only to the stand-in) and Lookup (the host resolved to
// loopback, for the sender's check), both set from Go test code alone.

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// pushHosts are the hosts Chromium's endpoints name; the stand-in's
// certificate names them so parley's sender, trusting the stand-in's CA,
// takes it for them.
var pushHosts = []string{"fcm.googleapis.com", "jmt17.google.com"}

// GCM is Chromium's push service stand-in.
type GCM struct {
	svc   *Service
	plain *httptest.Server // check-in, registration, and the CONNECT proxy
	push  *httptest.Server // the endpoints parley pushes to (TLS)
	mcs   net.Listener     // the browser's MCS connection (TLS)
	// mcsSPKI is the SHA-256 of the MCS certificate's key, which Chromium
	// is told to take (ChromiumFlags).
	mcsSPKI [32]byte

	mu        sync.Mutex
	regs      map[string]gcmReg // by token
	conn      net.Conn          // the browser's MCS connection, once logged in
	queue     [][]byte          // data messages waiting for it
	forwarded int
	requests  []string // what the browser asked, for a failing test's log
}

// gcmReg is one registration Chromium made: its app and subtype (the origin's
// push app id) and the sender (the VAPID key) it takes messages from.
type gcmReg struct{ app, subtype, sender string }

// StartGCM runs Chromium's push service on loopback until the test ends,
// checking pushes against svc's VAPID key (ExpectKey).
func (s *Service) StartGCM(t testing.TB) *GCM {
	g := &GCM{svc: s, regs: map[string]gcmReg{}}
	g.push = NewServer(t, http.HandlerFunc(g.handlePush))
	g.plain = httptest.NewServer(http.HandlerFunc(g.handlePlain))
	t.Cleanup(g.plain.Close)
	leaf, err := theCA().leaf()
	if err != nil {
		t.Fatalf("webpushsvc: certificate: %v", err)
	}
	x, err := x509.ParseCertificate(leaf.Certificate[0])
	if err != nil {
		t.Fatalf("webpushsvc: certificate: %v", err)
	}
	g.mcsSPKI = sha256.Sum256(x.RawSubjectPublicKeyInfo)
	g.mcs, err = tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("webpushsvc: MCS listener: %v", err)
	}
	t.Cleanup(func() {
		g.mcs.Close()
		g.mu.Lock()
		if g.conn != nil {
			g.conn.Close()
		}
		g.mu.Unlock()
	})
	go g.acceptMCS()
	return g
}

// ChromiumFlags are the command-line switches that point Chromium's GCM at
// the stand-in, and have it trust the stand-in's certificate (its CA's key)
// on the MCS connection (its key's hash: Chromium checks the MCS certificate
// against its own roots).
func (g *GCM) ChromiumFlags() map[string]string {
	spki := g.mcsSPKI
	return map[string]string{
		"gcm-checkin-url":                     g.plain.URL + "/checkin",
		"gcm-registration-url":                g.plain.URL + "/c2dm/register3",
		"gcm-mcs-endpoint":                    "https://" + g.mcs.Addr().String(),
		"ignore-certificate-errors-spki-list": base64.StdEncoding.EncodeToString(spki[:]),
	}
}

// Proxy is the HTTP proxy parley's sender is to use (push.Net.Proxy): every
// CONNECT it takes leads to the stand-in's endpoints, whatever host it names.
func (g *GCM) Proxy() *url.URL {
	u, _ := url.Parse(g.plain.URL)
	return u
}

// Lookup resolves Chromium's push hosts to loopback (push.Net.Lookup): the
// sender checks an endpoint's host before it sends through the proxy.
func Lookup(_ context.Context, host string) ([]netip.Addr, error) {
	for _, h := range pushHosts {
		if host == h {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
	}
	return nil, fmt.Errorf("webpushsvc: %s is not a push host the stand-in plays", host)
}

// Forwarded is how many pushes went on to the browser.
func (g *GCM) Forwarded() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.forwarded
}

// Requests is what the browser asked of the stand-in so far.
func (g *GCM) Requests() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.requests...)
}

func (g *GCM) note(what string) {
	g.mu.Lock()
	g.requests = append(g.requests, what)
	g.mu.Unlock()
}

func (g *GCM) handlePlain(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodConnect:
		g.tunnel(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/checkin":
		g.note("checkin")
		// AndroidCheckinResponse: stats_ok, android_id, security_token.
		b := []byte{1 << 3, 1}                                              // stats_ok (field 1, varint): true
		b = binary.LittleEndian.AppendUint64(append(b, 7<<3|1), 0x5eed1234) // android_id (fixed64)
		b = binary.LittleEndian.AppendUint64(append(b, 8<<3|1), 0x70c4e5)   // security_token (fixed64)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(b)
	case r.Method == http.MethodPost && r.URL.Path == "/c2dm/register3":
		if err := r.ParseForm(); err != nil {
			http.Error(w, "Error=PHONE_REGISTRATION_ERROR", http.StatusBadRequest)
			return
		}
		reg := gcmReg{app: r.PostForm.Get("app"), subtype: r.PostForm.Get("X-subtype"), sender: r.PostForm.Get("sender")}
		token := "tok" + newID()
		g.note("register " + reg.app + " " + reg.subtype)
		g.mu.Lock()
		g.regs[token] = reg
		g.mu.Unlock()
		fmt.Fprintf(w, "token=%s", token)
	default:
		http.NotFound(w, r)
	}
}

// tunnel is the CONNECT proxy: whatever host:port it names, the connection
// reaches the stand-in's endpoints.
func (g *GCM) tunnel(w http.ResponseWriter, r *http.Request) {
	host, _, _ := net.SplitHostPort(r.Host)
	if _, err := Lookup(r.Context(), host); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	up, err := net.Dial("tcp", g.push.Listener.Addr().String())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "no hijack", http.StatusInternalServerError)
		return
	}
	down, rw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if _, err := down.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		up.Close()
		down.Close()
		return
	}
	if n := rw.Reader.Buffered(); n > 0 {
		b, _ := rw.Reader.Peek(n)
		up.Write(b)
	}
	go func() { io.Copy(up, down); up.Close() }()
	go func() { io.Copy(down, up); down.Close() }()
}

// handlePush takes a push for a Chromium subscription and sends it on.
func (g *GCM) handlePush(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	token := ""
	for _, p := range []string{"/fcm/send/", "/wp/"} {
		if rest, ok := strings.CutPrefix(path, p); ok {
			token = rest
		}
	}
	g.mu.Lock()
	reg, ok := g.regs[token]
	g.mu.Unlock()
	if r.Method != http.MethodPost || !ok {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8192))
	g.svc.mu.Lock()
	vapid := g.svc.vapid
	g.svc.mu.Unlock()
	err := checkVAPID(r.Header.Get("Authorization"), "https://"+r.Host, vapid)
	if err == nil && r.Header.Get("Content-Encoding") != "aes128gcm" {
		err = fmt.Errorf("Content-Encoding %q, want aes128gcm", r.Header.Get("Content-Encoding"))
	}
	if err == nil && r.Header.Get("TTL") == "" {
		err = errors.New("no TTL header")
	}
	if err != nil {
		g.svc.mu.Lock()
		g.svc.rejected = append(g.svc.rejected, err.Error())
		g.svc.mu.Unlock()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	g.send(dataMessage(reg, body))
	w.WriteHeader(http.StatusCreated)
}

// dataMessage is an MCS DataMessageStanza carrying an aes128gcm push to reg.
func dataMessage(reg gcmReg, body []byte) []byte {
	appData := func(b []byte, k, v string) []byte {
		return field(b, 7, field(field(nil, 1, []byte(k)), 2, []byte(v)))
	}
	id := newID()
	var m []byte
	m = field(m, 2, []byte(id))
	m = field(m, 3, []byte(reg.sender))
	m = field(m, 5, []byte(reg.app))
	m = appData(m, "subtype", reg.subtype)
	m = appData(m, "content-encoding", "aes128gcm")
	m = field(m, 9, []byte("0:"+id))
	m = field(m, 21, body)
	return frame(tagDataMessageStanza, m)
}

// MCS tags and version (Chromium's google_apis/gcm/base/mcs_util.h).
const (
	mcsVersion           = 41
	tagHeartbeatPing     = 0
	tagHeartbeatAck      = 1
	tagLoginRequest      = 2
	tagLoginResponse     = 3
	tagDataMessageStanza = 8
)

// field appends a protobuf length-delimited field n holding v.
func field(b []byte, n uint64, v []byte) []byte {
	b = binary.AppendUvarint(b, n<<3|2)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// frame is one MCS packet: its tag, its length and the message.
func frame(tag byte, m []byte) []byte {
	b := binary.AppendUvarint([]byte{tag}, uint64(len(m)))
	return append(b, m...)
}

// send writes a data message to the browser, or queues it until it logs in.
func (g *GCM) send(msg []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.forwarded++
	if g.conn == nil {
		g.queue = append(g.queue, msg)
		return
	}
	g.conn.Write(msg)
}

func (g *GCM) acceptMCS() {
	for {
		c, err := g.mcs.Accept()
		if err != nil {
			return
		}
		go g.serveMCS(c)
	}
}

// serveMCS answers the browser's login, then its heartbeats, while the
// pushes go the other way (send).
func (g *GCM) serveMCS(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	if v, err := r.ReadByte(); err != nil || v < 38 {
		return
	}
	first := true
	for {
		tag, err := r.ReadByte()
		if err != nil {
			return
		}
		n, err := binary.ReadUvarint(r)
		if err != nil || n > 1<<20 {
			return
		}
		if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
			return
		}
		switch {
		case first && tag == tagLoginRequest:
			first = false
			g.note("mcs login")
			resp := field(nil, 1, []byte("login-"+newID())) // LoginResponse.id
			out := append([]byte{mcsVersion}, frame(tagLoginResponse, resp)...)
			g.mu.Lock()
			if g.conn != nil {
				g.conn.Close()
			}
			c.SetDeadline(time.Time{})
			c.Write(out)
			for _, m := range g.queue {
				c.Write(m)
			}
			g.queue, g.conn = nil, c
			g.mu.Unlock()
		case tag == tagHeartbeatPing:
			g.mu.Lock()
			c.Write(frame(tagHeartbeatAck, nil))
			g.mu.Unlock()
		}
	}
}

func newID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
