package irc

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		prefix  string
		command string
		params  []string
	}{
		{":alice!~a@host PRIVMSG #agents :hello there", "alice!~a@host", "PRIVMSG", []string{"#agents", "hello there"}},
		{"PING :irc.parley.test", "", "PING", []string{"irc.parley.test"}},
		{":irc.parley.test 001 parley :Welcome", "irc.parley.test", "001", []string{"parley", "Welcome"}},
		{"@time=x :bob JOIN #agents", "bob", "JOIN", []string{"#agents"}},
		{":bob privmsg #a ::starts with colon", "bob", "PRIVMSG", []string{"#a", ":starts with colon"}},
	}
	for _, tt := range tests {
		m, err := Parse(tt.in)
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if m.Prefix != tt.prefix || m.Command != tt.command || strings.Join(m.Params, "|") != strings.Join(tt.params, "|") {
			t.Errorf("%q: got %q %q %q, want %q %q %q", tt.in, m.Prefix, m.Command, m.Params, tt.prefix, tt.command, tt.params)
		}
	}
	if _, err := Parse(":only.a.prefix"); err == nil {
		t.Errorf("a line without a command: got no error")
	}
	if m, _ := Parse(":alice!~a@h PRIVMSG #x :hi"); m.Nick() != "alice" {
		t.Errorf("nick: got %q, want alice", m.Nick())
	}
}

func TestSendRefusesInjection(t *testing.T) {
	t.Parallel()
	c := &Conn{}
	for _, p := range [][]string{{"#a", "hi\r\nQUIT :x"}, {"#a", "nul\x00"}, {"#a b", "x"}} {
		if err := c.Send("PRIVMSG", p...); err == nil {
			t.Errorf("Send(PRIVMSG, %q): got no error, want a refusal", p)
		}
	}
	if err := c.Send("PRIVMSG", "#a", strings.Repeat("x", 600)); err == nil {
		t.Errorf("a line over 512 bytes: got no error")
	}
}

func TestParseTagsAndAccount(t *testing.T) {
	t.Parallel()
	m, err := Parse(`@account=alice;time=2026-01-01T00:00:00Z;+draft/x=a\sb\:c\\d :alice!~a@host PRIVMSG #agents :hi`)
	if err != nil {
		t.Fatal(err)
	}
	if m.Account() != "alice" || m.Prefix != "alice!~a@host" || m.Command != "PRIVMSG" {
		t.Errorf("got account %q prefix %q command %q", m.Account(), m.Prefix, m.Command)
	}
	if got := m.Tags["+draft/x"]; got != `a b;c\d` {
		t.Errorf("unescaped tag: got %q, want %q", got, `a b;c\d`)
	}
	for _, line := range []string{":alice!~a@host PRIVMSG #a :hi", "@time=x :alice!~a@host PRIVMSG #a :hi", "@account=* :alice!~a@host PRIVMSG #a :hi"} {
		m, _ := Parse(line)
		if m.Account() != "" {
			t.Errorf("%q: account %q, want none", line, m.Account())
		}
	}
}

// fakeServer plays an IRC server that offers caps and records what it was sent.
func fakeServer(t *testing.T, offer string) (addr string, got <-chan []string, send chan<- string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	lines, out := make(chan []string, 1), make(chan string, 8)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		w := func(s string) { _, _ = nc.Write([]byte(s + "\r\n")) }
		var seen []string
		sc := bufio.NewScanner(nc)
		for sc.Scan() {
			l := sc.Text()
			seen = append(seen, l)
			switch {
			case l == "CAP LS 302":
				w(":srv CAP * LS * :multi-prefix sasl=PLAIN")
				w(":srv CAP * LS :" + offer)
			case strings.HasPrefix(l, "CAP REQ "):
				w(":srv CAP * ACK :" + strings.TrimPrefix(strings.TrimPrefix(l, "CAP REQ "), ":"))
			case l == "CAP END":
				w(":srv 001 bot :Welcome")
				lines <- seen
				for s := range out {
					w(s)
				}
				return
			}
		}
	}()
	return ln.Addr().String(), lines, out
}

func TestDialNegotiatesAccountTag(t *testing.T) {
	t.Parallel()
	addr, got, send := fakeServer(t, "account-tag extended-join")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := DialAs(ctx, addr, Identity{Nick: "bot", User: "parley", Realname: "parley"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seen := strings.Join(<-got, "\n")
	if !strings.Contains(seen, "CAP REQ account-tag") || !strings.Contains(seen, "USER parley 0 * parley") {
		t.Errorf("the client sent:\n%s\nwant CAP REQ account-tag and USER parley", seen)
	}
	if caps := c.Caps(); len(caps) != 1 || caps[0] != "account-tag" {
		t.Errorf("caps: got %q, want [account-tag]", caps)
	}
	send <- "@account=alice :alice!~a@host PRIVMSG #agents :hi"
	close(send)
	select {
	case m := <-c.Messages():
		if m.Account() != "alice" || m.Params[1] != "hi" {
			t.Errorf("message: got account %q params %q", m.Account(), m.Params)
		}
	case <-ctx.Done():
		t.Fatal("no message")
	}
}

func TestDialWithoutAccountTagEndsCap(t *testing.T) {
	t.Parallel()
	addr, got, send := fakeServer(t, "multi-prefix")
	close(send)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, "bot", "parley")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seen := strings.Join(<-got, "\n")
	if strings.Contains(seen, "CAP REQ") || len(c.Caps()) != 0 {
		t.Errorf("requested a cap the server does not offer:\n%s", seen)
	}
}
