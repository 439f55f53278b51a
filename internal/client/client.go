// Package client speaks the chat socket from Go: `parley chat`, `parley send`,
// the tests and the benchmarks all use it, so they exercise the contract a browser
// does (docs/protocol.md).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/coder/websocket"

	"github.com/parleyhq/parley/internal/chat"
)

// Options say which route to open.
type Options struct {
	Chat    string // "" lets the server make one (said in config)
	Channel string // web (default) or tui
	Since   int64  // < 0: no since (the server replays the tail)
	Thread  chat.ThreadID
	// DraftAppends asks for a draft that only grew as what it adds
	// (chat.AgentDraft.Extends; the client applies it with Onto).
	DraftAppends bool
	// Header is added to the upgrade request (e.g. Origin in tests).
	Header http.Header
	// ReadLimit bounds one incoming frame (default 16 MiB).
	ReadLimit int64
	// HTTPClient dials the socket (default http.DefaultClient); tests give
	// one whose connections have small buffers.
	HTTPClient *http.Client
}

// Event is one server frame.
type Event struct {
	Type   string        `json:"type"`
	Thread chat.ThreadID `json:"thread,omitempty"`
	Seq    int64         `json:"seq,omitempty"`
	TS     string        `json:"ts,omitempty"`
	// Restated marks an open card sent again after a replay: no log entry.
	Restated bool            `json:"restated,omitempty"`
	Raw      json.RawMessage `json:"-"`
}

// Decode unmarshals the whole frame into v (e.g. a chat payload struct).
func (e Event) Decode(v any) error { return json.Unmarshal(e.Raw, v) }

// Conn is one chat socket.
type Conn struct {
	ws  *websocket.Conn
	buf bytes.Buffer // the frame being read, reused: one reader at a time
}

// SocketURL is the socket at path on server: ws:// for an http:// server,
// wss:// for https://, with query q. Every socket client dials through it.
func SocketURL(server, path string, q url.Values) (string, error) {
	u, err := url.Parse(strings.TrimRight(server, "/") + path)
	if err != nil {
		return "", fmt.Errorf("client: server URL: %w", err)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// Dial opens the socket at server (http://host:port) with the token.
func Dial(ctx context.Context, server, token string, opt Options) (*Conn, *http.Response, error) {
	q := url.Values{}
	if opt.Chat != "" {
		q.Set("chat", opt.Chat)
	}
	if opt.Channel != "" {
		q.Set("channel", opt.Channel)
	}
	if opt.Since >= 0 {
		q.Set("since", strconv.FormatInt(opt.Since, 10))
	}
	if opt.Thread != "" {
		q.Set("thread", string(opt.Thread))
	}
	if opt.DraftAppends {
		q.Set("drafts", "append")
	}
	u, err := SocketURL(server, "/ws/chat", q)
	if err != nil {
		return nil, nil, err
	}
	h := http.Header{}
	for k, v := range opt.Header {
		h[k] = v
	}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	ws, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: h, HTTPClient: opt.HTTPClient})
	if err != nil {
		return nil, resp, fmt.Errorf("client: dial: %w", err)
	}
	limit := opt.ReadLimit
	if limit == 0 {
		limit = 16 << 20
	}
	ws.SetReadLimit(limit)
	return &Conn{ws: ws}, resp, nil
}

// Send writes one input (any JSON-marshalable value, or raw bytes as they are).
func (c *Conn) Send(ctx context.Context, v any) error {
	var b []byte
	switch v := v.(type) {
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return fmt.Errorf("client: encode: %w", err)
		}
	}
	return c.ws.Write(ctx, websocket.MessageText, b)
}

// NextRaw reads the next frame without decoding it.
func (c *Conn) NextRaw(ctx context.Context) ([]byte, error) {
	return c.read(ctx)
}

// read reads one frame into the reused buffer and returns a copy of exactly
// its size (the library's Read allocates at least 512 bytes a frame and grows
// from there, most of a fast reader's garbage).
func (c *Conn) read(ctx context.Context) ([]byte, error) {
	_, r, err := c.ws.Reader(ctx)
	if err != nil {
		return nil, err
	}
	c.buf.Reset()
	if _, err := c.buf.ReadFrom(r); err != nil {
		return nil, err
	}
	if c.buf.Cap() > 1<<20 {
		defer func() { c.buf = bytes.Buffer{} }() // one huge frame is not kept
	}
	return bytes.Clone(c.buf.Bytes()), nil
}

// Next reads the next frame.
func (c *Conn) Next(ctx context.Context) (Event, error) {
	b, err := c.read(ctx)
	if err != nil {
		return Event{}, err
	}
	return Parse(b)
}

// Parse decodes one frame. The connection-level "thread" event carries the thread
// object under "thread", where log events carry its id.
func Parse(b []byte) (Event, error) {
	var head struct {
		Type     string          `json:"type"`
		Thread   json.RawMessage `json:"thread"`
		Seq      int64           `json:"seq"`
		TS       string          `json:"ts"`
		Restated bool            `json:"restated"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return Event{}, fmt.Errorf("client: frame is not JSON: %w", err)
	}
	ev := Event{Type: head.Type, Seq: head.Seq, TS: head.TS, Restated: head.Restated, Raw: b}
	if len(head.Thread) > 0 && head.Thread[0] == '"' {
		var id string
		_ = json.Unmarshal(head.Thread, &id)
		ev.Thread = chat.ThreadID(id)
	} else if len(head.Thread) > 0 && head.Thread[0] == '{' {
		var th struct {
			ID chat.ThreadID `json:"id"`
		}
		_ = json.Unmarshal(head.Thread, &th)
		ev.Thread = th.ID
	}
	return ev, nil
}

// Close closes the socket normally.
func (c *Conn) Close() error { return c.ws.Close(websocket.StatusNormalClosure, "") }

// CloseNow drops the socket without the closing handshake.
func (c *Conn) CloseNow() error { return c.ws.CloseNow() }

// CloseStatus returns the close code of an error from Next (-1 when none).
func CloseStatus(err error) (int, string) {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return int(ce.Code), ce.Reason
	}
	return -1, ""
}

// Local finds the running local daemon: its URL from <data>/addr and its token.
func Local(dataDir string) (server, token string, err error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "addr"))
	if err != nil {
		return "", "", fmt.Errorf("no running parley found in %s (start it with `parley serve`): %w", dataDir, err)
	}
	t, err := os.ReadFile(filepath.Join(dataDir, "token"))
	if err != nil {
		return "", "", fmt.Errorf("client: token: %w", err)
	}
	addr := strings.TrimSpace(string(b))
	if strings.HasPrefix(addr, "https://") {
		if err := pinLocal(addr, filepath.Join(dataDir, AddrCertFile)); err != nil {
			return "", "", err
		}
		return addr, strings.TrimSpace(string(t)), nil
	}
	return "http://" + addr, strings.TrimSpace(string(t)), nil
}
