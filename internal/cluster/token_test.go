package cluster

import (
	"bytes"
	"sync"
	"testing"
)

// Hubs starting at once on a fresh folder agree on one join key: the one that
// finds the file made by another reads it rather than failing.
func TestJoinKeyMadeOnceUnderRacingStarts(t *testing.T) {
	t.Parallel()
	for range 20 {
		dir := t.TempDir()
		const n = 8
		keys := make([][]byte, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { keys[i], errs[i] = joinKey(dir) })
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("start %d: %v", i, errs[i])
			}
			if !bytes.Equal(keys[i], keys[0]) {
				t.Fatalf("start %d made its own key", i)
			}
		}
	}
}
