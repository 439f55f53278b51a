package daemon_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// rawRequest writes text on a new TCP connection to the daemon.
func (e *testEnv) rawConn(text string) net.Conn {
	e.t.Helper()
	c, err := net.Dial("tcp", e.d.Addr())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, text); err != nil {
		e.t.Fatal(err)
	}
	return c
}

// An idle keep-alive connection is closed after limits.conn_idle_timeout.
func TestIdleConnectionClosed(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, func(c *config.Config) { c.Limits.ConnIdleTimeout = config.Duration{Duration: 300 * time.Millisecond} })
	c := e.rawConn("GET /api/version HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + e.d.Token() + "\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("status %d, close %v: want 200 on a kept-alive connection", resp.StatusCode, resp.Close)
	}
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection: read %v, want EOF (closed by the server)", err)
	}
	t.Logf("closed after %v idle", time.Since(start).Round(time.Millisecond))
}

// A stranger announcing a body and dripping it gets 401 at once, and the
// connection is closed: nothing of the body is waited for.
func TestDrippingUnauthenticatedPostRefusedAtOnce(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	for _, auth := range []string{"", "Authorization: Bearer wrong-token-0123456789\r\n", "Cookie: parley_session=forged\r\n"} {
		c := e.rawConn("POST /api/threads/x/messages HTTP/1.1\r\nHost: x\r\n" + auth +
			"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"text\":\"")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%q: no answer while the body drips: %v", auth, err)
		}
		if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
			t.Fatalf("%q: status %d close %v: want 401 and the connection closed", auth, resp.StatusCode, resp.Close)
		}
	}
}

// The real user's API call and socket work while strangers flood the daemon
// with connections that never finish a request, in a process with few file
// descriptors (the report's `ulimit -n 256`).
func TestUnauthenticatedFloodSparesTheUser(t *testing.T) {
	t.Parallel()
	// Not parallel: it lowers the process's open-file limit for its flood.
	const capConns, flood = 16, 150
	e := startDaemon(t, func(c *config.Config) { c.Limits.MaxUnauthenticated = capConns })
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	// The flood's client ends live in this process too: room for them, the
	// cap's server ends and the user's few, not for a server end per stranger.
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	lim := old
	lim.Cur = uint64(len(fds) + flood + capConns + 40)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })

	var strangers []net.Conn
	for i := range flood {
		c, err := net.Dial("tcp", e.d.Addr())
		if err != nil {
			t.Fatalf("stranger %d: %v", i, err)
		}
		strangers = append(strangers, c)
		if i%2 == 0 {
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n") // headers that never end
		} else {
			io.WriteString(c, "POST /api/threads HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{")
		}
	}
	defer func() {
		for _, c := range strangers {
			c.Close()
		}
	}()
	// The server closed all but the cap's worth.
	closed := 0
	for _, c := range strangers {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		// Closed: an end of stream, or a reset when the server closed it
		// before reading what the stranger had sent (likely under load).
		// Only the deadline means it is still open.
		if _, err := io.Copy(io.Discard, c); err == nil || errors.Is(err, syscall.ECONNRESET) {
			closed++
		}
		if closed >= flood-capConns {
			break
		}
	}
	if closed < flood-capConns {
		t.Fatalf("the server closed %d of %d strangers' connections; want at least %d (cap %d)", closed, flood, flood-capConns, capConns)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url()+"/api/version", nil)
	req.Header.Set("Authorization", "Bearer "+e.d.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("the user's API call during the flood: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the user's API call during the flood: status %d", resp.StatusCode)
	}
	sock := e.dial("", -1)
	sock.WaitFor(0, 5*time.Second, func(ev client.Event) bool { return ev.Type == "replay_done" }, "the user's socket connects")
}

// Past limits.max_sockets a socket is refused with a clear error; a closed one
// frees its slot.
func TestSocketCap(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, func(c *config.Config) { c.Limits.MaxSockets = 2 })
	a := e.dial("a", -1)
	e.dial("b", -1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, resp, err := client.Dial(ctx, e.url(), e.d.Token(), client.Options{Chat: "c"})
	if err == nil {
		t.Fatal("a third socket was accepted past max_sockets = 2")
	}
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third socket: %v (response %v): want 503", err, resp)
	}
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "too many sockets open (at most 2") {
		t.Fatalf("third socket's error does not say why: %s", body)
	}
	a.Client().CloseNow()
	testkit.Eventually(t, 5*time.Second, func() bool {
		var c *client.Conn
		c, _, err = client.Dial(ctx, e.url(), e.d.Token(), client.Options{Chat: "c"})
		if err == nil {
			c.CloseNow()
		}
		return err == nil
	}, "a closed socket's slot was not freed: %v", testkit.Later(func() any { return err }))
}

// The change stream and the chat socket outlive limits.read_timeout: it bounds
// how long a request takes to arrive, not how long an answer may stream.
func TestLongLivedConnectionsOutliveReadTimeout(t *testing.T) {
	t.Parallel()
	const readTimeout = 200 * time.Millisecond
	e := startDaemon(t, func(c *config.Config) { c.Limits.ReadTimeout = config.Duration{Duration: readTimeout} })
	_, events := openChanges(t, e, e.d.Token())
	if ev := <-events; ev.name != "ready" {
		t.Fatalf("first change event %+v, want ready", ev)
	}
	sock := e.dial("long", -1)
	sock.WaitFor(0, 5*time.Second, chatsock.Type("replay_done"), "connected")
	time.Sleep(4 * readTimeout) // the time under test: past the read deadline
	n := sock.Len()
	sock.Send(chatsock.Msg("m-long", "still there?"))
	sock.WaitFor(n, 10*time.Second, chatsock.Delivery("m-long", "submitted"), "the socket's receipt after read_timeout")
	select {
	case ev, ok := <-events:
		if !ok || ev.name != "threads" {
			t.Fatalf("change stream after read_timeout: %+v (open %v), want a threads event", ev, ok)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the change stream fell silent after read_timeout")
	}
}
