package web

import "sync"

// socketCount counts the open chat sockets, so Shutdown can wait for them to
// say goodbye. A sync.WaitGroup cannot do it: its Add may not race its Wait,
// and a socket can be accepted while a shutdown has begun (the race detector
// caught it). Once closing, no socket is counted in: it is refused.
type socketCount struct {
	mu      sync.Mutex
	n       int
	closing bool
	zero    chan struct{} // closed when n reaches 0 after closing began
}

// add counts a socket in; false once Shutdown began.
func (c *socketCount) add() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.n++
	return true
}

// done counts a socket out.
func (c *socketCount) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	if c.n == 0 && c.zero != nil {
		close(c.zero)
		c.zero = nil
	}
}

// drained refuses new sockets and is closed once the open ones are gone.
func (c *socketCount) drained() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing = true
	ch := make(chan struct{})
	if c.n == 0 {
		close(ch)
	} else {
		c.zero = ch
	}
	return ch
}
