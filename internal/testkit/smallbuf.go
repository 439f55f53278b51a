package testkit

import (
	"net"
	"net/http"
	"syscall"
)

// SmallBuffers is an HTTP client whose connections have a 4 KiB receive
// buffer (SO_RCVBUF set before connect, which also stops Linux from growing
// it). A reader that stops reading fills it after a frame or two, where an
// autotuned loopback buffer holds megabytes: the socket buffers between
// parley and a slow reader are then a small, fixed part of what parley holds
// for it, and its drop comes after about limits.conn_buffer events, not
// after tens of thousands.
func SmallBuffers() *http.Client {
	d := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); err != nil {
			return err
		}
		return serr
	}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}
