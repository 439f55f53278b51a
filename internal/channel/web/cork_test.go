package web

import (
	"bytes"
	"net"
	"strings"
	"testing"
)

// recConn records each write the network would see.
type recConn struct {
	net.Conn
	writes [][]byte
}

func (r *recConn) Write(p []byte) (int, error) {
	r.writes = append(r.writes, bytes.Clone(p))
	return len(p), nil
}

func TestCorkedFramesGoOutTogetherInOrder(t *testing.T) {
	t.Parallel()
	rec := &recConn{}
	c := &corkConn{Conn: rec}
	c.Write([]byte("a")) // uncorked: at once
	c.cork()
	for _, s := range []string{"b", "c", "d"} {
		c.Write([]byte(s))
	}
	if len(rec.writes) != 1 {
		t.Fatalf("writes while corked reached the network: %q", rec.writes)
	}
	if err := c.uncork(); err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("e"))
	var got []string
	for _, w := range rec.writes {
		got = append(got, string(w))
	}
	if strings.Join(got, "|") != "a|bcd|e" {
		t.Fatalf("writes %q; want a, bcd in one write, e", got)
	}
}

func TestACorkHoldsAtMostCorkMax(t *testing.T) {
	t.Parallel()
	rec := &recConn{}
	c := &corkConn{Conn: rec}
	c.cork()
	big := bytes.Repeat([]byte("x"), corkMax-10)
	c.Write(big)
	c.Write([]byte("0123456789abc")) // past corkMax: written with what waits
	if len(rec.writes) != 1 || len(rec.writes[0]) != corkMax+3 || !bytes.HasSuffix(rec.writes[0], []byte("abc")) {
		t.Fatalf("got %d writes (first %d bytes); want one of %d ending in the newest bytes", len(rec.writes), len(rec.writes[0]), corkMax+3)
	}
	c.Write([]byte("y"))
	if err := c.uncork(); err != nil {
		t.Fatal(err)
	}
	if len(rec.writes) != 2 || string(rec.writes[1]) != "y" {
		t.Fatalf("writes after the full one: %q", rec.writes[1:])
	}
}
