//go:build e2e

package terminal_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
	"github.com/parleyhq/parley/internal/testkit/sendbench"
)

// BenchmarkSocketToSubmitted measures the whole way a person's message takes
// into the real Claude Code TUI: the socket `message` → the `submitted`
// receipt on the same socket (router, lane, the tmux driver's send and its
// verification). Between sends, untimed, it waits for the turn to end. It
// counts false `submitted` (the receipt said submitted but the model never got
// exactly that text) and `failed` receipts.
// Run: go test -tags e2e -run '^$' -bench SocketToSubmitted -benchtime 200x -timeout 60m ./internal/e2e/terminal/
//
// Each case runs with each hook command: parley-hook (as installed) and
// `parley hook` (the whole binary, what parley runs without parley-hook
// beside it). Claude Code waits for the UserPromptSubmit hook before the
// driver sees its evidence.
func BenchmarkSocketToSubmitted(b *testing.B) {
	hooks := []struct {
		name string
		argv func() []string
	}{
		{"parley-hook", func() []string { return []string{testkit.HookBinary(b)} }},
		{"parley_hook", func() []string { return []string{testkit.ParleyBinary(b), "hook"} }},
	}
	for _, bc := range sendbench.Cases {
		for _, hk := range hooks {
			b.Run(bc.Name+"/"+hk.name, func(b *testing.B) { benchSocketToSubmitted(b, bc, hk.argv()) })
		}
	}
}

func benchSocketToSubmitted(b *testing.B, bc sendbench.Case, hook []string) {
	td := startTmuxDaemonWith(b, []claudeapi.Rule{
		{Match: claudeapi.Match{Prefix: "bench"}, Reply: claudeapi.Text("ok", 1, 0)},
		{Match: claudeapi.Match{Exact: "yes"}, Reply: claudeapi.Text("ok", 1, 0)},
		{Match: claudeapi.Match{Exact: "warm up"}, Reply: claudeapi.Text("ok", 1, 0)},
	}, rigOpts{hook: hook})
	s := chatsock.Dial(b, "http://"+td.d.Addr(), td.d.Token(), client.Options{Chat: "bench", Since: -1})
	s.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "ready")
	// The first message starts Claude Code: not what this measures.
	s.Send(chatsock.Msg("warm", "warm up"))
	from := s.WaitFor(0, wait, chatsock.PromptDone("warm", chat.StopEndTurn), "the warm-up turn")
	got := func(text string) int {
		n := 0
		for _, r := range td.api.ScenarioRequests() {
			if r.LastUserText() == text {
				n++
			}
		}
		return n
	}
	var lat []time.Duration
	falseSubmitted, failed := 0, 0
	b.ResetTimer()
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		if bc.Staged != "" {
			td.typeByHand(b, bc.Staged)
		}
		id, text := fmt.Sprintf("m%d", i), bc.Text(i)
		before := got(text)
		b.StartTimer()
		start := time.Now()
		s.Send(chatsock.Msg(id, text))
		at := s.WaitFor(from, wait, func(ev client.Event) bool {
			return chatsock.Delivery(id, chat.DeliverySubmitted)(ev) || chatsock.Delivery(id, chat.DeliveryFailed)(ev)
		}, "the receipt")
		d := time.Since(start)
		b.StopTimer()
		if chatsock.Delivery(id, chat.DeliveryFailed)(s.Get(at)) {
			failed++
			b.Logf("send %d failed: %s", i, s.Get(at).Raw)
		} else {
			lat = append(lat, d)
		}
		from = s.WaitFor(at, wait, func(ev client.Event) bool {
			return ev.Type == chat.TypePromptDone && chatsock.FieldOf(ev, "message_id") == id
		}, "the turn's end")
		if !chatsock.Delivery(id, chat.DeliveryFailed)(s.Get(at)) && got(text) <= before {
			falseSubmitted++
			b.Logf("send %d: submitted, but the model never got exactly %q", i, text)
		}
	}
	sendbench.Report(b, bc.Name, lat, falseSubmitted, failed)
}

// typeByHand types text into the agent's input box as a person at the
// terminal would, and waits until the box shows it.
func (td *tmuxDaemon) typeByHand(b *testing.B, text string) {
	b.Helper()
	out, err := exec.Command("tmux", "-L", td.socket, "list-panes", "-a", "-F", "#{pane_id}").Output()
	if err != nil {
		b.Fatalf("list-panes: %v", err)
	}
	panes := strings.Fields(string(out))
	if len(panes) != 1 {
		b.Fatalf("panes %v, want the one agent's", panes)
	}
	if err := exec.Command("tmux", "-L", td.socket, "send-keys", "-t", panes[0], "-l", text).Run(); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		scr, _ := exec.Command("tmux", "-L", td.socket, "capture-pane", "-p", "-t", panes[0]).Output()
		if strings.Contains(string(scr), text) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("%q typed by hand never showed in the box", text)
}
