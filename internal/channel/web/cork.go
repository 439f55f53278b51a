package web

import (
	"bufio"
	"net"
	"net/http"
	"sync"
)

// corkMax bounds what a corked connection holds before it writes anyway.
const corkMax = 64 << 10

// corkConn lets a socket's writer send a burst of frames in few writes. The
// websocket library flushes every frame to the network at once, one write
// system call each, the largest cost of a busy connection (a replay of 10,000
// events was 10,000 writes). While corked, what it flushes is collected here;
// uncork writes it in one call. Everything written goes through mu in call
// order, corked or not, so frames keep their order whoever writes them (the
// library answers pings from the reader's goroutine).
type corkConn struct {
	net.Conn
	mu     sync.Mutex
	corked bool
	buf    []byte
}

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked && len(c.buf)+len(p) <= corkMax {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	if len(c.buf) > 0 {
		// Full, or uncorked meanwhile: what waits goes first, in the same write.
		c.buf = append(c.buf, p...)
		err := c.writeBuf()
		if err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// cork starts collecting writes.
func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork writes what was collected and lets writes through again.
func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	return c.writeBuf()
}

// writeBuf writes the collected bytes; mu held.
func (c *corkConn) writeBuf() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	if cap(c.buf) > corkMax*2 {
		c.buf = nil
	} else {
		c.buf = c.buf[:0]
	}
	return err
}

// corkingWriter hands the websocket library a corkConn when it takes the
// connection over from the HTTP server.
type corkingWriter struct {
	http.ResponseWriter
	conn *corkConn
}

func (w *corkingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// What the server buffered (the 101 response) goes out first, then the
	// library's writer writes through the cork.
	if err := brw.Writer.Flush(); err != nil {
		nc.Close()
		return nil, nil, err
	}
	w.conn = &corkConn{Conn: nc}
	return w.conn, bufio.NewReadWriter(brw.Reader, bufio.NewWriterSize(w.conn, 4096)), nil
}
