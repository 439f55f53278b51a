package storetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// testAttachments: what a thread follows survives a reopen (a restarted
// parley follows it again), is replaced, dropped, and goes with its thread.
func testAttachments(t *testing.T, open Opener) {
	name := dbName(t)
	s := openNamed(t, open, name)
	ctx := t.Context()
	seedThread(t, s, "t1", 1)
	seedThread(t, s, "t2", 1)
	pane := store.Attachment{Thread: "t1", Kind: "adopt", PID: 4242, ProcStart: "98765", Server: "default", Pane: "%3"}
	watched := store.Attachment{Thread: "t2", Kind: "watch", PID: 77, ProcStart: "123", TranscriptAt: 4096}
	mustCommit(t, s, store.Batch{Attach: &pane})
	mustCommit(t, s, store.Batch{Attach: &watched})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openNamed(t, open, name)
	got, err := s.Attachments(ctx)
	if err != nil || !slices.Equal(got, []store.Attachment{pane, watched}) {
		t.Fatalf("after a reopen: %+v %v, want %+v", got, err, []store.Attachment{pane, watched})
	}
	// Replaced: the thread follows one process at a time.
	pane.PID, pane.Pane = 5151, "%7"
	mustCommit(t, s, store.Batch{Attach: &pane})
	// Dropped: the process exited, or was handed back.
	mustCommit(t, s, store.Batch{Attach: &store.Attachment{Thread: "t2"}})
	if got, err := s.Attachments(ctx); err != nil || !slices.Equal(got, []store.Attachment{pane}) {
		t.Fatalf("replaced and dropped: %+v %v, want %+v", got, err, pane)
	}
	if err := s.Commit(ctx, store.Batch{Attach: &store.Attachment{Thread: "t1", Kind: "watch"}}); !errors.Is(err, chat.ErrBadInput) {
		t.Fatalf("an attachment without a pid: %v, want bad input", err)
	}
	if err := s.DeleteThread(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Attachments(ctx); err != nil || len(got) != 0 {
		t.Fatalf("after the thread's delete: %+v %v, want none", got, err)
	}
}
