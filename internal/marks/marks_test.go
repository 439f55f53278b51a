package marks

import (
	"testing"
	"time"
)

func TestMarksReachTheHookOnlyWhileSet(t *testing.T) {
	var got []Mark
	if !Start().IsZero() || On() {
		t.Fatal("marks are on before anyone set a hook")
	}
	End("lost", "", time.Now()) // no hook: nothing to call
	Set(func(m Mark) { got = append(got, m) })
	start := Start()
	if start.IsZero() || !On() {
		t.Fatal("Start gave no time with a hook set")
	}
	End("commit", "agent_chunk", start)
	Set(nil)
	End("after", "", start)
	if len(got) != 1 || got[0].Stage != "commit" || got[0].Of != "agent_chunk" || !got[0].At.Equal(start) || got[0].Took < 0 {
		t.Fatalf("marks = %+v, want the one commit", got)
	}
}
