package irc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// No IRC library could be fetched here (the module proxy served none of the
// well-kept ones), so this is the small part of RFC 1459/2812 a bot needs:
// register, join, PRIVMSG, PING/PONG, nick in use, and IRCv3's account-tag
// capability where the server offers it. Lines are parsed strictly and every
// outgoing parameter is checked for CR, LF and NUL, so no text can inject a
// command.

// Message is one parsed line.
type Message struct {
	Tags    map[string]string // IRCv3 message tags, unescaped (nil when none)
	Prefix  string            // nick!user@host or a server name
	Command string
	Params  []string
}

// Nick is the prefix's nick.
func (m Message) Nick() string {
	n, _, _ := strings.Cut(m.Prefix, "!")
	return n
}

// Account is the services account the sender is logged in as, from the
// server's IRCv3 account tag ("" when the server sent none: not logged in, or a
// server without account-tag). Only the server sets it: a client-only tag
// starts with "+", so no client can forge it.
func (m Message) Account() string {
	if a := m.Tags["account"]; a != "*" {
		return a
	}
	return ""
}

// parseTags reads an IRCv3 tag string (without the "@").
func parseTags(s string) map[string]string {
	tags := map[string]string{}
	for _, kv := range strings.Split(s, ";") {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" {
			continue
		}
		tags[k] = unescapeTag(v)
	}
	return tags
}

// unescapeTag undoes IRCv3's tag value escaping.
func unescapeTag(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' {
			b.WriteByte(v[i])
			continue
		}
		i++
		if i == len(v) {
			break // a trailing backslash is dropped
		}
		switch v[i] {
		case ':':
			b.WriteByte(';')
		case 's':
			b.WriteByte(' ')
		case 'r':
			b.WriteByte('\r')
		case 'n':
			b.WriteByte('\n')
		default:
			b.WriteByte(v[i]) // \\ is a backslash; an unknown escape is the character
		}
	}
	return b.String()
}

// Parse reads one IRC line (without CR LF).
func Parse(line string) (Message, error) {
	var m Message
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "@") { // IRCv3 tags
		var tags string
		tags, line, _ = strings.Cut(line[1:], " ")
		m.Tags = parseTags(tags)
	}
	if strings.HasPrefix(line, ":") {
		var rest string
		m.Prefix, rest, _ = strings.Cut(line[1:], " ")
		line = rest
	}
	for line != "" {
		line = strings.TrimLeft(line, " ")
		if strings.HasPrefix(line, ":") {
			m.Params = append(m.Params, line[1:])
			break
		}
		var p string
		p, line, _ = strings.Cut(line, " ")
		if p == "" {
			continue
		}
		if m.Command == "" {
			m.Command = strings.ToUpper(p)
		} else {
			m.Params = append(m.Params, p)
		}
	}
	if m.Command == "" {
		return m, errors.New("irc: a line without a command")
	}
	return m, nil
}

// Conn is one client connection to an IRC server.
type Conn struct {
	nc   net.Conn
	nick string
	caps []string // IRCv3 capabilities the server acknowledged

	wmu sync.Mutex
	in  chan Message
	err error
	end chan struct{}
}

// Identity is who a connection registers as.
type Identity struct {
	Nick     string
	User     string // the user name (ident) part of nick!user@host; "" = Nick
	Realname string
	// LocalAddr, when set, is the local IP address to connect from.
	LocalAddr string
}

// Dial connects and registers as nick (adding "_" while the nick is taken).
func Dial(ctx context.Context, addr, nick, realname string) (*Conn, error) {
	return DialAs(ctx, addr, Identity{Nick: nick, Realname: realname})
}

// wantCaps are the IRCv3 capabilities requested when the server offers them:
// account-tag puts the sender's services account on every message.
var wantCaps = []string{"account-tag"}

// DialAs connects and registers as id. It negotiates IRCv3 capabilities
// (CAP LS 302) first; a server without CAP registers as usual.
func DialAs(ctx context.Context, addr string, id Identity) (*Conn, error) {
	d := net.Dialer{}
	if id.LocalAddr != "" {
		ip := net.ParseIP(id.LocalAddr)
		if ip == nil {
			return nil, fmt.Errorf("irc: local address %q is not an IP address", id.LocalAddr)
		}
		d.LocalAddr = &net.TCPAddr{IP: ip}
	}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("irc: dial %s: %w", addr, err)
	}
	user := id.User
	if user == "" {
		user = id.Nick
	}
	c := &Conn{nc: nc, nick: id.Nick, in: make(chan Message, 256), end: make(chan struct{})}
	go c.read()
	fail := func(err error) (*Conn, error) {
		nc.Close()
		return nil, err
	}
	for _, l := range [][]string{{"CAP", "LS", "302"}, {"NICK", id.Nick}, {"USER", user, "0", "*", id.Realname}} {
		if err := c.Send(l[0], l[1:]...); err != nil {
			return fail(err)
		}
	}
	var offered []string
	for {
		select {
		case m, ok := <-c.in:
			if !ok {
				return nil, fmt.Errorf("irc: registration: %w", c.Err())
			}
			switch m.Command {
			case "001":
				if len(m.Params) > 0 {
					c.nick = m.Params[0]
				}
				return c, nil
			case "433": // nick in use
				c.nick += "_"
				if err := c.Send("NICK", c.nick); err != nil {
					return fail(err)
				}
			case "CAP":
				// CAP <target> LS [*] :caps | CAP <target> ACK|NAK :caps
				if len(m.Params) < 3 {
					continue
				}
				switch strings.ToUpper(m.Params[1]) {
				case "LS":
					offered = append(offered, capNames(m.Params[len(m.Params)-1])...)
					if len(m.Params) > 3 && m.Params[2] == "*" {
						continue // more LS lines follow
					}
					var req []string
					for _, w := range wantCaps {
						if slices.Contains(offered, w) {
							req = append(req, w)
						}
					}
					if len(req) == 0 {
						err = c.Send("CAP", "END")
					} else {
						err = c.Send("CAP", "REQ", strings.Join(req, " "))
					}
				case "ACK":
					c.caps = append(c.caps, capNames(m.Params[2])...)
					err = c.Send("CAP", "END")
				case "NAK":
					err = c.Send("CAP", "END")
				}
				if err != nil {
					return fail(err)
				}
			case "ERROR":
				return fail(fmt.Errorf("irc: registration refused: %s", strings.Join(m.Params, " ")))
			}
		case <-ctx.Done():
			return fail(ctx.Err())
		}
	}
}

// capNames reads a CAP list ("a b=1 c"): the names, without values.
func capNames(s string) []string {
	var out []string
	for _, f := range strings.Fields(s) {
		name, _, _ := strings.Cut(f, "=")
		out = append(out, strings.TrimPrefix(name, "-"))
	}
	return out
}

// Caps are the IRCv3 capabilities the server acknowledged.
func (c *Conn) Caps() []string { return slices.Clone(c.caps) }

// Nick is the nick the server gave us.
func (c *Conn) Nick() string { return c.nick }

// Messages delivers what the server sends (PINGs are answered here); it is
// closed when the connection ends.
func (c *Conn) Messages() <-chan Message { return c.in }

// Err says why the connection ended.
func (c *Conn) Err() error {
	<-c.end
	return c.err
}

// Close ends the connection.
func (c *Conn) Close() error {
	_ = c.Send("QUIT", "bye")
	return c.nc.Close()
}

func (c *Conn) read() {
	defer close(c.end)
	defer close(c.in)
	sc := bufio.NewScanner(c.nc)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		m, err := Parse(sc.Text())
		if err != nil {
			continue
		}
		if m.Command == "PING" {
			_ = c.Send("PONG", m.Params...)
			continue
		}
		c.in <- m
	}
	c.err = sc.Err()
	if c.err == nil {
		c.err = errors.New("irc: server closed the connection")
	}
}

// Send writes one command. Only the last parameter may hold spaces; none may
// hold CR, LF or NUL.
func (c *Conn) Send(cmd string, params ...string) error {
	var b strings.Builder
	b.WriteString(cmd)
	for i, p := range params {
		if strings.ContainsAny(p, "\r\n\x00") {
			return fmt.Errorf("irc: parameter %d of %s holds a line break or NUL", i, cmd)
		}
		last := i == len(params)-1
		if !last && (p == "" || strings.ContainsAny(p, " ") || strings.HasPrefix(p, ":")) {
			return fmt.Errorf("irc: parameter %d of %s must be one word", i, cmd)
		}
		b.WriteByte(' ')
		if last && (p == "" || strings.ContainsAny(p, " ") || strings.HasPrefix(p, ":")) {
			b.WriteByte(':')
		}
		b.WriteString(p)
	}
	b.WriteString("\r\n")
	if b.Len() > 512 {
		return fmt.Errorf("irc: %s line is %d bytes, over IRC's 512", cmd, b.Len())
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := c.nc.Write([]byte(b.String()))
	if err != nil {
		return fmt.Errorf("irc: write: %w", err)
	}
	return nil
}

// Privmsg says text to target, one PRIVMSG per line given.
func (c *Conn) Privmsg(target string, lines ...string) error {
	for _, l := range lines {
		if err := c.Send("PRIVMSG", target, l); err != nil {
			return err
		}
	}
	return nil
}
