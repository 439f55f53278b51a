package irc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// No IRC library could be fetched here (the module proxy served none of the
// well-kept ones), so this is the small part of RFC 1459/2812 a bot needs:
// register, join, PRIVMSG, PING/PONG, nick in use. Lines are parsed strictly and
// every outgoing parameter is checked for CR, LF and NUL, so no text can inject
// a command.

// Message is one parsed line.
type Message struct {
	Prefix  string // nick!user@host or a server name
	Command string
	Params  []string
}

// Nick is the prefix's nick.
func (m Message) Nick() string {
	n, _, _ := strings.Cut(m.Prefix, "!")
	return n
}

// Parse reads one IRC line (without CR LF).
func Parse(line string) (Message, error) {
	var m Message
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "@") { // IRCv3 tags: not used
		_, line, _ = strings.Cut(line, " ")
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

	wmu sync.Mutex
	in  chan Message
	err error
	end chan struct{}
}

// Dial connects and registers as nick (adding "_" while the nick is taken).
func Dial(ctx context.Context, addr, nick, realname string) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("irc: dial %s: %w", addr, err)
	}
	c := &Conn{nc: nc, nick: nick, in: make(chan Message, 256), end: make(chan struct{})}
	go c.read()
	if err := c.Send("NICK", nick); err != nil {
		nc.Close()
		return nil, err
	}
	if err := c.Send("USER", nick, "0", "*", realname); err != nil {
		nc.Close()
		return nil, err
	}
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
					return nil, err
				}
			case "ERROR":
				nc.Close()
				return nil, fmt.Errorf("irc: registration refused: %s", strings.Join(m.Params, " "))
			}
		case <-ctx.Done():
			nc.Close()
			return nil, ctx.Err()
		}
	}
}

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
