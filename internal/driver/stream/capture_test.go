package stream

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// TestCaptureReplayUserMessages rewrites
// testdata/claude-2.1.197/replay-user-messages.jsonl from the real Claude
// Code, started with the driver's own arguments: "say hi" (thinking, then
// text in 3 chunks at 100 ms), and "and again" written 100 ms after it, while
// the first turn runs. A "#prompt" line marks where parley wrote a prompt.
// Run: PARLEY_CAPTURE=1 go test -run TestCaptureReplayUserMessages ./internal/driver/stream/
func TestCaptureReplayUserMessages(t *testing.T) {
	t.Parallel()
	if os.Getenv("PARLEY_CAPTURE") == "" {
		t.Skip("rewrites a golden capture; set PARLEY_CAPTURE=1")
	}
	srv := claudeapi.Start(t, claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "say hi"}, Reply: claudeapi.Reply{Blocks: []claudeapi.Block{
			{Type: claudeapi.BlockThinking, Text: "a greeting, then"},
			{Type: claudeapi.BlockText, Text: helloText, Chunks: 3, Delay: claudeapi.Duration(100 * time.Millisecond)},
		}}},
		{Match: claudeapi.Match{Exact: "and again"}, Reply: claudeapi.Text("Hello again.", 2, 0)},
	}})
	home, cwd := t.TempDir(), t.TempDir()
	cmd := exec.Command(testkit.ClaudeBin(t), Args(driver.Spec{})...)
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), claudeapi.Env(t, srv, home, cwd)...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var mu sync.Mutex
	var out []byte
	note := func(b []byte) {
		mu.Lock()
		out = append(append(out, b...), '\n')
		mu.Unlock()
	}
	initialized := make(chan struct{})
	write := func(l string) {
		if _, err := fmt.Fprintln(stdin, l); err != nil {
			t.Error(err)
		}
	}
	go func() {
		write(`{"type":"control_request","request_id":"init","request":{"subtype":"initialize"}}`)
		<-initialized
		for i, text := range []string{"say hi", "and again"} {
			if i > 0 {
				time.Sleep(100 * time.Millisecond)
			}
			note([]byte("#prompt " + text))
			write(`{"type":"user","message":{"role":"user","content":"` + text + `"},"parent_tool_use_id":null,"session_id":""}`)
		}
	}()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, MaxLineBytes)
	results := 0
	for results < 2 && sc.Scan() {
		l, err := decodeLine(sc.Bytes())
		if err == nil && l.Type == "control_response" {
			close(initialized)
		}
		if err == nil && l.Type == "result" {
			results++
		}
		note(sc.Bytes())
	}
	if results < 2 {
		t.Fatalf("stdout ended after %d results: %v", results, sc.Err())
	}
	mu.Lock()
	defer mu.Unlock()
	if err := os.WriteFile(filepath.Join("testdata", "claude-2.1.197", "replay-user-messages.jsonl"), out, 0o644); err != nil {
		t.Fatal(err)
	}
}
