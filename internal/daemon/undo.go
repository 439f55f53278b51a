package daemon

// undoList is what a start has opened so far, each part added as soon as it
// is open; a start that fails part way runs it once, deferred, and so closes
// every part newest first: each before the parts it was built on.
type undoList []func()

func (u *undoList) add(close func()) { *u = append(*u, close) }

func (u undoList) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}
