package daemon_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
)

// arrivalConn is a benchmark reader's TCP connection that asks the kernel for
// each segment's arrival time (SO_TIMESTAMPNS). On loopback a segment arrives
// in the reader's socket during the server's write system call, so the stamp
// splits an event's latency in two: the server's share (the agent's chunk to
// its frame written to this connection) and the reader's (woken, scheduled on
// a core, frame read and decoded).
type arrivalConn struct {
	*net.TCPConn
	raw syscall.RawConn
	oob []byte
	// last is when the newest segment of the last read arrived (UnixNano; 0
	// when the kernel gave none). Only the reading goroutine touches it.
	last int64

	// The one read in progress, for recv (made once: a closure per read
	// would be garbage the readers' GC pays for).
	p       []byte
	n, oobn int
	rerr    error
	recv    func(fd uintptr) bool
}

func newArrivalConn(tc *net.TCPConn, raw syscall.RawConn) *arrivalConn {
	c := &arrivalConn{TCPConn: tc, raw: raw, oob: make([]byte, syscall.CmsgSpace(16))}
	c.recv = func(fd uintptr) bool {
		c.n, c.oobn, _, _, c.rerr = syscall.Recvmsg(int(fd), c.p, c.oob, 0)
		return c.rerr != syscall.EAGAIN
	}
	return c
}

func (c *arrivalConn) Read(p []byte) (int, error) {
	c.p = p
	err := c.raw.Read(c.recv)
	c.p = nil
	if err == nil {
		err = c.rerr
	}
	if err != nil {
		return 0, err
	}
	if c.n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	// One control message at most: SO_TIMESTAMPNS's struct timespec.
	if h := syscall.SizeofCmsghdr; c.oobn >= h+16 {
		level := int32(binary.NativeEndian.Uint32(c.oob[8:12]))
		typ := int32(binary.NativeEndian.Uint32(c.oob[12:16]))
		if level == syscall.SOL_SOCKET && typ == syscall.SO_TIMESTAMPNS {
			sec := int64(binary.NativeEndian.Uint64(c.oob[h : h+8]))
			nsec := int64(binary.NativeEndian.Uint64(c.oob[h+8 : h+16]))
			c.last = sec*1e9 + nsec
		}
	}
	return c.n, nil
}

// arrivalClient dials one socket whose connection it hands to got.
func arrivalClient(got func(*arrivalConn)) *http.Client {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := nc.(*net.TCPConn)
		raw, err := tc.SyscallConn()
		if err != nil {
			nc.Close()
			return nil, err
		}
		var serr error
		if err := raw.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
		}); err != nil || serr != nil {
			nc.Close()
			return nil, fmt.Errorf("SO_TIMESTAMPNS: %v %v", err, serr)
		}
		c := newArrivalConn(tc, raw)
		got(c)
		return c, nil
	}
	return &http.Client{Transport: &http.Transport{DialContext: dial}}
}
