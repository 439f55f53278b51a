package irc

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
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
