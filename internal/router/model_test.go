package router

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
)

// A thread's session restarts on the model its agent last reported, not on
// the agent's default (issue 28, item 5: a resumed Claude Code otherwise
// takes its transcript's model, without the 1M context); a thread moved to
// another agent asks it for none of the old agent's.
func TestAThreadRestartsOnTheModelItsAgentReported(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		g := newRig(t, dir, nil)
		_, th, err := g.send("m1", "model opus[1m]")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if m := g.thread(th).Model; m != "opus[1m]" {
			t.Errorf("the thread's model %q, want what its agent reported, opus[1m]", m)
		}
		g.close()

		g = newRig(t, dir, nil)
		if _, _, err := g.send("m2", "hello"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if ms := g.drv.Models(); !slices.Equal(ms, []string{"opus[1m]"}) {
			t.Errorf("after a restart the session started with models %q, want [opus[1m]]", ms)
		}
		g.close()

		// The config lost "echo"; the thread moves to "other".
		other := func(o *Options) {
			o.Agents[0].ID = "other"
			o.DefaultAgent = "other"
		}
		g = newRig(t, dir, other)
		defer g.close()
		if err := g.r.Control(context.Background(), Control{Thread: th, Edit: &ThreadEdit{Agent: ptr("other")}}); err != nil {
			t.Fatalf("move: %v", err)
		}
		if _, _, err := g.send("m3", "hello"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if ms := g.drv.Models(); !slices.Equal(ms, []string{""}) {
			t.Errorf("the moved thread's new agent started with models %q, want none asked for", ms)
		}
	})
}
