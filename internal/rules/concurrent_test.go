package rules

import (
	"sync"
	"testing"
	"time"
)

// Lanes decide at the same time (each card as it opens): deciding shares
// nothing between calls (run with -race).
func TestDecideFromManyLanesAtOnce(t *testing.T) {
	rules := []Rule{{Action: Allow, Tool: "Bash", Command: "go test *"}}
	c := testCall(t)
	c.Command = `go test "./..."`
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if v := Decide(rules, c, time.Now()); v.Action != Allow {
					t.Errorf("verdict %+v, want allow", v)
					return
				}
			}
		}()
	}
	wg.Wait()
}
