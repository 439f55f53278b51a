package tui_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/stream"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
	"github.com/parleyhq/parley/internal/testkit/tmuxterm"
)

var (
	usageRe = regexp.MustCompile(`usage: \d+ in · \d+ out · \$0\.\d{4} · context \d+% \(\d+ of 1\.0M\)`)
	costRe  = regexp.MustCompile(`│ idle │ online │ \$0\.\d{4}`)
)

// claudeWait bounds one step with the real Claude Code behind the daemon.
const claudeWait = 60 * time.Second

func claudeScenario() claudeapi.Scenario {
	return claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "hello"}, Reply: claudeapi.Text("Hello from the **scripted** model.", 4, 5*time.Millisecond)},
		{Match: claudeapi.Match{Exact: "make the file"}, Reply: claudeapi.Bash("touch made-by-bash", "Make a file")},
		{Match: claudeapi.Match{Exact: "make another"}, Reply: claudeapi.Bash("touch made-elsewhere", "Make another file")},
		{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text("The command ran.", 1, 0)},
		{Match: claudeapi.Match{Exact: "ask me"}, Reply: claudeapi.ToolUse("AskUserQuestion", map[string]any{"questions": []map[string]any{{
			"question": "Which colour?", "header": "Colour", "multiSelect": false,
			"options": []map[string]string{{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}},
		}}})},
		{Match: claudeapi.Match{ToolResult: "AskUserQuestion"}, Reply: claudeapi.Text("Thanks for the answer.", 1, 0)},
		{Match: claudeapi.Match{Exact: "chain"}, Reply: claudeapi.Bash("cd /tmp && echo <done>", "Chain two")},
		{Match: claudeapi.Match{Exact: "show tabs"}, Reply: claudeapi.Text("```go\nfunc f() int {\n\tif true {\n\t\treturn 1\n\t}\n}\n```", 1, 0)},
		{Match: claudeapi.Match{Exact: "slowly"}, Reply: claudeapi.Text(strings.Repeat("tick ", 2000), 2000, 20*time.Millisecond)},
	}}
}

// TestChatWithClaudeCode is the end-to-end list: `parley chat` in a real
// terminal (tmux), a real daemon, the real Claude Code over the stream
// transport, and the scripted Messages API as the only stand-in.
func TestChatWithClaudeCode(t *testing.T) {
	testkit.NeedsTmux(t)
	testkit.NeedsRealAgent(t)
	bin := testkit.ParleyBinary(t)
	claude := testkit.ClaudeBin(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sc := claudeScenario()
	// Claude Code edits only a file it has read.
	greet := filepath.Join(work, "greet.go")
	if err := os.WriteFile(greet, []byte("package main\n\nfunc greet() string {\n\treturn \"hello\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc.Rules = append([]claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "edit the greeting"}, Reply: claudeapi.ToolUse("Read", map[string]any{"file_path": greet})},
		{Match: claudeapi.Match{ToolResult: "Read"}, Reply: claudeapi.ToolUse("Edit", map[string]any{
			"file_path": greet, "old_string": "\treturn \"hello\"", "new_string": "\treturn \"hello, world\""})},
		{Match: claudeapi.Match{ToolResult: "Edit"}, Reply: claudeapi.Text("Edited.", 1, 0)},
	}, sc.Rules...)
	api := claudeapi.Start(t, sc)
	env := map[string]string{}
	for _, kv := range claudeapi.Env(t, api, home, work) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	cfg := config.Default(filepath.Join(root, "data"), work)
	cfg.Addr = "127.0.0.1:0"
	cfg.Agents = []config.Agent{{ID: "claude", Transport: config.TransportStream, Command: claude, Env: env}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	d, err := daemon.Start(context.Background(), cfg, daemon.Options{
		Drivers: map[string]driver.Driver{config.TransportStream: stream.New(nil)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := d.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	server := "http://" + d.Addr()
	tm := tmuxterm.Start(t, []string{"NO_COLOR=1"}, bin, "chat", "--server", server, "--token", d.Token(), "--chat", "e2e-claude")
	tm.Within = claudeWait
	t.Cleanup(func() { t.Logf("the screen at the end:\n%s", tm.Screen()) })
	tm.WaitScreen("online", tmuxterm.Has("│ online"))

	step(t, "answer", func(t *testing.T) {
		tm.T = t
		tm.TypeLine("hello")
		tm.WaitScreen("the answer", tmuxterm.Has("  Hello from the scripted model."))
		tm.WaitScreen("the receipt", tmuxterm.Has("you  ✓ submitted"))
	})
	step(t, "the turn's usage and the thread's", func(t *testing.T) {
		tm.T = t
		// Claude Code's result carries the turn's tokens and cost; the model's
		// context window comes with it (the stand-in's model: 1M).
		// One condition, not a wait then a look: tmux 3.3 has no synchronized
		// output, so one capture can hold half of the program's next frame.
		tm.WaitScreen("the turn's usage line (with the 1M window's fill) and the thread's cost", func(s string) bool {
			return usageRe.MatchString(s) && costRe.MatchString(s) && strings.Contains(s, "of 1.0M)")
		})
	})
	step(t, "a terminal widened and narrowed again is drawn at its width", func(t *testing.T) {
		tm.T = t
		for _, w := range []int{160, 80} {
			tm.Tmux("resize-window", "-t", "t", "-x", strconv.Itoa(w))
			tm.WaitScreen(fmt.Sprintf("the layout at %d columns", w), func(s string) bool {
				lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
				return len(lines) == 24 && strings.HasPrefix(lines[19], " parley │") &&
					strings.HasPrefix(lines[23], "Enter send")
			})
		}
	})
	step(t, "permission by key runs the tool", func(t *testing.T) {
		tm.T = t
		tm.TypeLine("make the file")
		tm.WaitScreen("the permission card", tmuxterm.Has("Permission: touch made-by-bash"))
		tm.Keys("1") // Allow once
		// The card must go: one capture can hold half a frame (tmux 3.3 has
		// no synchronized output), so the screen is waited on, not looked at once.
		tm.WaitScreen("the tool's result, with the card gone", func(s string) bool {
			return strings.Contains(s, "The command ran.") && !strings.Contains(s, "Permission: touch made-by-bash")
		})
		if _, err := os.Stat(filepath.Join(work, "made-by-bash")); err != nil {
			t.Errorf("the tool did not run: %v", err)
		}
	})
	step(t, "question by free text", func(t *testing.T) {
		tm.T = t
		tm.TypeLine("ask me")
		tm.WaitScreen("the question card", tmuxterm.Has("Which colour?"))
		tm.TypeLine("green, like grass")
		tm.WaitScreen("the agent's thanks", tmuxterm.Has("Thanks for the answer."))
		res, ok := api.ToolResultFor("AskUserQuestion")
		if !ok || !strings.Contains(res.ResultText(), "green, like grass") {
			t.Errorf("the model got %q (found %v); want the person's own words", res.ResultText(), ok)
		}
	})
	step(t, "an Edit card shows its diff before it is allowed; Ctrl+O shows the tool's diff", func(t *testing.T) {
		tm.T = t
		tm.TypeLine("edit the greeting")
		tm.WaitScreen("the card's diff", tmuxterm.Has("Permission: Edit "+greet, "-     return \"hello\"", "+     return \"hello, world\""))
		tm.Keys("1") // Allow once
		tm.WaitScreen("the edit made", tmuxterm.Has("Edited."))
		tm.Keys("C-o")
		tm.WaitScreen("the Edit tool's diff", tmuxterm.Has("--- "+greet, "-     return \"hello\"", "+     return \"hello, world\""))
		tm.Keys("C-o")
		tm.WaitScreen("collapsed", func(s string) bool { return !strings.Contains(s, "--- "+greet) })
	})
	step(t, "esc stops a slow turn", func(t *testing.T) {
		tm.T = t
		tm.TypeLine("slowly")
		tm.WaitScreen("streaming", func(s string) bool { return strings.Contains(s, "tick tick") && strings.Contains(s, "● working") })
		tm.Keys("Escape")
		tm.WaitScreen("the turn cancelled, said which", func(s string) bool {
			return strings.Contains(s, "· Stopped.") && strings.Contains(s, "│ idle │") &&
				strings.Contains(s, "stopping the turn answering “slowly”")
		})
	})
	step(t, "↑ in the empty box recalls earlier prompts", func(t *testing.T) {
		tm.T = t
		tm.Keys("Up")
		tm.WaitScreen("the newest prompt", tmuxterm.Has("> slowly"))
		tm.Keys("Up")
		tm.WaitScreen("the one before", tmuxterm.Has("> edit the greeting"))
		tm.Keys("Down", "Down")
		tm.WaitScreen("the box empty again", func(s string) bool {
			return !strings.Contains(s, "> slowly") && !strings.Contains(s, "> edit the greeting")
		})
	})
	step(t, "card answered from a second client disappears", func(t *testing.T) {
		tm.T = t
		tm.TypeLine("make another")
		tm.WaitScreen("the permission card", tmuxterm.Has("Permission: touch made-elsewhere"))
		ctx, cancel := context.WithTimeout(context.Background(), claudeWait)
		defer cancel()
		// A second socket client on the same route, as a second terminal or tab.
		c, _, err := client.Dial(ctx, server, d.Token(), client.Options{Chat: "e2e-claude", Channel: "tui", Since: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		var rid string
		for rid == "" {
			ev, err := c.Next(ctx)
			if err != nil {
				t.Fatalf("second client: %v", err)
			}
			var p chat.PermissionRequest
			if ev.Type == chat.TypePermissionRequest && ev.Decode(&p) == nil && strings.Contains(p.Tool.Title, "made-elsewhere") {
				rid = p.RequestID
			}
		}
		if err := c.Send(ctx, map[string]string{"type": "permission_response", "request_id": rid, "option_id": chat.OptionAllowOnce}); err != nil {
			t.Fatal(err)
		}
		tm.WaitScreen("the card gone", func(s string) bool {
			return !strings.Contains(s, "Permission: touch made-elsewhere") && strings.Contains(s, "Enter send")
		})
		testkit.Eventually(t, claudeWait, func() bool {
			_, err := os.Stat(filepath.Join(work, "made-elsewhere"))
			return err == nil
		}, "the tool allowed elsewhere did not run")
	})
	step(t, "a card's JSON reads && and <>, as written", func(t *testing.T) {
		tm.T = t
		tm.TypeLine("chain")
		s := tm.WaitScreen("the permission card", tmuxterm.Has("Permission: cd /tmp && echo <done>"))
		tm.Keys("2") // Reject
		tm.WaitScreen("the card gone", func(s string) bool { return !strings.Contains(s, "Permission: cd /tmp") })
		if strings.Contains(s, `\u0026`) || strings.Contains(s, `\u003c`) {
			t.Errorf("the card shows HTML escapes:\n%s", s)
		}
		tm.Keys("C-o")
		s = tm.WaitScreen("the tool's input", tmuxterm.Has(`"command":"cd /tmp && echo <done>"`))
		tm.Keys("C-o")
		if strings.Contains(s, `\u0026`) {
			t.Errorf("the tool's input shows HTML escapes:\n%s", s)
		}
	})
	step(t, "code keeps its tabs", func(t *testing.T) {
		tm.T = t
		tm.TypeLine("show tabs")
		tm.WaitScreen("the code, indented by its tabs", func(s string) bool {
			return strings.Contains(s, "    func f() int {\n        if true {\n            return 1\n        }")
		})
	})
	// Last: a mode other than default changes which tools ask.
	step(t, "mode key", func(t *testing.T) {
		tm.T = t
		tm.WaitScreen("the mode", tmuxterm.Has("│ mode default │"))
		tm.Keys("BTab")
		tm.WaitScreen("the next mode", tmuxterm.Has("│ mode acceptEdits │"))
		tm.Keys("BTab")
		tm.WaitScreen("the one after", tmuxterm.Has("│ mode plan │"))
	})
	step(t, "the status line names the model as the dashboard does", func(t *testing.T) {
		tm.T = t
		ctx, cancel := context.WithTimeout(context.Background(), claudeWait)
		defer cancel()
		c, _, err := client.Dial(ctx, server, d.Token(), client.Options{Chat: "e2e-claude", Channel: "tui", Since: 0})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		var mode chat.Mode
		for {
			ev, err := c.Next(ctx)
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			if ev.Type == chat.TypeMode {
				ev.Decode(&mode)
			}
			if ev.Type == chat.TypeReplayDone {
				break
			}
		}
		want := mode.ModelName()
		if want == "" {
			t.Fatalf("Claude Code reported no model in %+v", mode)
		}
		// Claude Code reports its full model id ("claude-opus-4-8[1m]"); the
		// one shown is its model list's entry, named as the list names it.
		listed := false
		for _, o := range mode.ConfigOptions {
			for _, v := range o.Values {
				listed = listed || (o.ID == chat.ModelOption && v.ID == o.Current && v.Name == want)
			}
		}
		if !listed {
			t.Errorf("the model shown (%q) is not an entry of Claude Code's model list: %+v", want, mode.ConfigOptions)
		}
		// The model comes last on the status line, the first part an
		// 80-column terminal cuts: shown here in a wider one.
		tm.Tmux("resize-window", "-t", "t", "-x", "160")
		tm.WaitScreen("the model in the status line", tmuxterm.Has("│ model "+want))
	})
}
