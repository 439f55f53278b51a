package daemon_test

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// A full disk holds an answer back and loses none of it. While the agent
// streams, the daemon's files may not grow (its RLIMIT_FSIZE, set from
// outside as prlimit(1) does, so its writes fail with EFBIG as they fail
// with ENOSPC on a full disk): its commits fail and nothing more is shown.
// Once they may grow again, every chunk is stored and shown, once, in order,
// with no gap in the log, and the turn ends as the agent ended it.
func TestAFullDiskHoldsAnAnswerBackAndLosesNone(t *testing.T) {
	t.Parallel()
	data, work, logFile := childDirs(t)
	var log testkit.LockedBuffer
	d := startChildTo(t, data, work, logFile, &log)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the daemon's log:\n%s", log.String())
		}
	})
	c := d.dial(t, "disk")
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	c.Send(chatsock.Msg("m0", "say warm"))
	i := c.WaitFor(0, 10*time.Second, chatsock.PromptDone("m0", chat.StopEndTurn), "m0 answered")

	const chunks = 600
	c.Send(chatsock.Msg("m1", "stream "+strconv.Itoa(chunks)+" 10ms 4000"))
	c.WaitFor(i+1, 10*time.Second, chatsock.Type(chat.TypeAgentChunk), "m1's answer begins")
	// From here no file of the daemon's may grow past the largest now.
	var largest int64
	entries, err := os.ReadDir(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			largest = max(largest, fi.Size())
		}
	}
	pid := d.cmd.Process.Pid
	var was unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, nil, &was); err != nil {
		t.Fatal(err)
	}
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: uint64(largest), Max: was.Max}, nil); err != nil {
		t.Fatal(err)
	}
	// Three refused commits: the agent went on streaming into the kept
	// batch while the disk stayed full.
	testkit.Eventually(t, 20*time.Second, func() bool { return strings.Count(log.String(), "msg=commit ") >= 3 },
		"commits refused while the files may not grow")
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &was, nil); err != nil {
		t.Fatal(err)
	}
	c.WaitFor(0, 60*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "m1's turn ends once the disk has room")

	// Every chunk once, in order; every event once, no gap.
	var seqs []int64
	next := 1
	for _, ev := range c.Snapshot() {
		if ev.Seq == 0 {
			continue
		}
		seqs = append(seqs, ev.Seq)
		if ev.Type != chat.TypeAgentChunk {
			continue
		}
		text, _ := chatsock.FieldOf(ev, "text").(string)
		if !strings.HasPrefix(text, "c") {
			continue // m0's "warm"
		}
		want := "c" + strconv.Itoa(next) + "."
		if !strings.HasPrefix(text, want) {
			t.Fatalf("chunk %d: got %.12q; want %s…", next, text, want)
		}
		next++
	}
	if next != chunks+1 {
		t.Fatalf("%d of %d chunks shown", next-1, chunks)
	}
	for i := range seqs {
		if seqs[i] != int64(i+1) {
			t.Fatalf("seqs shown %v…: want 1, 2, 3… each once", seqs[:min(len(seqs), i+3)])
		}
	}
	// And a reader who comes now replays the same from the store.
	r := chatsock.Dial(t, d.url, d.token, client.Options{Chat: "disk", Since: 0})
	last := seqs[len(seqs)-1]
	r.WaitFor(0, 10*time.Second, func(ev client.Event) bool { return ev.Seq == last }, "the log replayed")
	var replayed []int64
	for _, ev := range r.Snapshot() {
		if ev.Seq != 0 && ev.Seq <= last {
			replayed = append(replayed, ev.Seq)
		}
	}
	if !slices.Equal(replayed, seqs) {
		t.Fatalf("replayed %d events (last %d); the live socket showed %d (last %d)", len(replayed), replayed[len(replayed)-1], len(seqs), seqs[len(seqs)-1])
	}
}
