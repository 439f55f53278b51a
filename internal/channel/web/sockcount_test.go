package web

import "testing"

// A socket counted in while Shutdown waits is no race; after Shutdown began,
// none is counted in, and the wait ends when the open ones are done.
func TestSocketCountRefusesAfterShutdownBegan(t *testing.T) {
	t.Parallel()
	var c socketCount
	if !c.add() {
		t.Fatal("refused before shutdown")
	}
	ch := c.drained()
	if c.add() {
		t.Fatal("counted in after shutdown began")
	}
	select {
	case <-ch:
		t.Fatal("drained with a socket open")
	default:
	}
	c.done()
	<-ch
}
