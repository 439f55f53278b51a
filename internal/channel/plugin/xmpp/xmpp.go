// Package xmpp is parley's XMPP plugin (`parley plugin xmpp`): an ACP client on
// its stdin/stdout (package bridge), parley being the agent, bridged to XMPP
// one-to-one chats through mellium.im/xmpp. Each person's bare JID is one chat,
// so one route, and is the user id that allowed_users names.
//
// Its config section (from initialize's _meta "parley/config"):
//
//	server = "xmpp.example.net:5222"   # where to connect (the JID's domain is the service)
//	jid = "parley@example.net"
//	password = "…"                     # never logged
//	ca_file = ""                       # PEM roots for StartTLS ("" = the system's)
//	message_limit = 3000               # bytes per message
package xmpp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"

	"mellium.im/sasl"
	"mellium.im/xmlstream"
	"mellium.im/xmpp"
	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"

	"github.com/parleyhq/parley/internal/channel/plugin/bridge"
)

// Config is the plugin's section of parley's config.
type Config struct {
	Server       string `json:"server"`
	JID          string `json:"jid"`
	Password     string `json:"password"`
	CAFile       string `json:"ca_file"`
	MessageLimit int    `json:"message_limit"`
}

// DefaultMessageLimit keeps a message comfortably within what servers accept.
const DefaultMessageLimit = 3000

// Run is the plugin: ACP on in/out, XMPP as configured by parley.
func Run(ctx context.Context, in io.Reader, out io.Writer, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b, raw, err := bridge.Connect(ctx, in, out, "parley-xmpp", log)
	if err != nil {
		return err
	}
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("xmpp: config: %w", err)
	}
	if cfg.Server == "" || cfg.JID == "" {
		return errors.New("xmpp: config needs \"server\" (host:port) and \"jid\"")
	}
	if cfg.MessageLimit <= 0 {
		cfg.MessageLimit = DefaultMessageLimit
	}
	c, err := Dial(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	b.Use(c, bridge.Format{Limit: cfg.MessageLimit, PerSecond: 20})
	log.Info("xmpp connected", "jid", c.JID())
	if err := b.Reopen(ctx); err != nil {
		return err
	}
	for {
		select {
		case m, ok := <-c.Messages():
			if !ok {
				return c.Err()
			}
			b.Handle(ctx, m.From, m.From, m.Body)
		case <-b.Done():
			return errors.New("xmpp: parley closed the connection")
		case <-ctx.Done():
			return nil
		}
	}
}

// Message is one chat message received: From is the sender's bare JID.
type Message struct {
	From string
	Body string
}

type messageBody struct {
	stanza.Message
	Body string `xml:"body"`
}

// Client is one XMPP client session: logged in, bound, available.
type Client struct {
	s   *xmpp.Session
	in  chan Message
	end chan struct{}
	err error
}

// Dial connects to cfg.Server, negotiates StartTLS (with cfg.CAFile's roots when
// set), logs in with SCRAM (or PLAIN over TLS), binds a resource and says it is
// available.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	j, err := jid.Parse(cfg.JID)
	if err != nil {
		return nil, fmt.Errorf("xmpp: jid %q: %w", cfg.JID, err)
	}
	tc := &tls.Config{ServerName: j.Domain().String(), MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("xmpp: ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("xmpp: ca_file %s holds no certificate", cfg.CAFile)
		}
		tc.RootCAs = pool
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", cfg.Server)
	if err != nil {
		return nil, fmt.Errorf("xmpp: dial %s: %w", cfg.Server, err)
	}
	s, err := xmpp.NewClientSession(ctx, j, nc,
		xmpp.StartTLS(tc),
		xmpp.SASL("", cfg.Password, sasl.ScramSha256Plus, sasl.ScramSha1Plus, sasl.ScramSha256, sasl.ScramSha1, sasl.Plain),
		xmpp.BindResource(),
	)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("xmpp: session as %s: %w", j, err)
	}
	if err := s.Send(ctx, stanza.Presence{Type: stanza.AvailablePresence}.Wrap(nil)); err != nil {
		s.Close()
		nc.Close()
		return nil, fmt.Errorf("xmpp: presence: %w", err)
	}
	c := &Client{s: s, in: make(chan Message, 256), end: make(chan struct{})}
	go c.serve()
	return c, nil
}

func (c *Client) serve() {
	defer close(c.end)
	defer close(c.in)
	c.err = c.s.Serve(xmpp.HandlerFunc(func(t xmlstream.TokenReadEncoder, start *xml.StartElement) error {
		if start.Name.Local != "message" {
			return nil
		}
		m, ok := readMessage(t, start)
		if !ok || m.Body == "" || m.Type != stanza.ChatMessage {
			return nil
		}
		c.in <- Message{From: m.From.Bare().String(), Body: m.Body}
		return nil
	}))
	if c.err == nil {
		c.err = errors.New("xmpp: the server ended the session")
	}
}

// readMessage reads a message stanza's attributes from start and its body
// from the tokens (which may or may not begin with start itself).
func readMessage(r xml.TokenReader, start *xml.StartElement) (messageBody, bool) {
	var m messageBody
	for _, a := range start.Attr {
		switch a.Name.Local {
		case "from":
			j, err := jid.Parse(a.Value)
			if err != nil {
				return m, false
			}
			m.From = j
		case "type":
			m.Type = stanza.MessageType(a.Value)
		case "id":
			m.ID = a.Value
		}
	}
	var body strings.Builder
	depth, inBody := 0, false
	for {
		tok, err := r.Token()
		if err != nil {
			break
		}
		switch v := tok.(type) {
		case xml.StartElement:
			depth++
			if v.Name.Local == "message" && depth == 1 {
				depth = 0 // the stanza's own start, repeated
				continue
			}
			inBody = depth == 1 && v.Name.Local == "body"
		case xml.EndElement:
			if depth == 0 {
				return messageBody{Message: m.Message, Body: body.String()}, true
			}
			depth--
			inBody = false
		case xml.CharData:
			if inBody {
				body.Write(v)
			}
		}
	}
	m.Body = body.String()
	return m, true
}

// JID is the bound address.
func (c *Client) JID() string { return c.s.LocalAddr().String() }

// Messages delivers chat messages; it is closed when the session ends.
func (c *Client) Messages() <-chan Message { return c.in }

// Err says why the session ended.
func (c *Client) Err() error {
	<-c.end
	return c.err
}

// Say sends a chat message to a bare JID.
func (c *Client) Say(ctx context.Context, to, text string) error {
	j, err := jid.Parse(to)
	if err != nil {
		return fmt.Errorf("xmpp: to %q: %w", to, err)
	}
	return c.s.Encode(ctx, messageBody{Message: stanza.Message{To: j, Type: stanza.ChatMessage}, Body: text})
}

// Close ends the session and the connection.
func (c *Client) Close() error {
	err := c.s.Close()
	cerr := c.s.Conn().Close()
	return errors.Join(err, cerr)
}
