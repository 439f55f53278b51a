package transcript

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
)

// A follower's place outlives it (a watched session followed again after a
// restart): the next follower, started where the first said it had read
// whole records, shows every record written since, once, in order. A record
// half written when the first stopped is neither shown half nor twice.
func TestFollowPositionsAcrossAHalfWrittenRecord(t *testing.T) {
	t.Parallel()
	lines := goldenLines(t)
	// The gap begins with a prompt of the person's, cut in the middle.
	k := -1
	ref := NewParser()
	ref.prompts = true
	var want []chat.Payload
	for i, l := range lines {
		ps, err := ref.Line(l)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if k < 0 && i > 0 && len(ps) > 0 {
			if _, ok := ps[0].(chat.UserMessage); ok {
				k = i
			}
		}
		if k >= 0 {
			for _, p := range ps {
				if _, ok := p.(TurnEnd); !ok {
					want = append(want, p)
				}
			}
		}
	}
	if k < 0 || len(want) < 3 {
		t.Fatalf("no prompt after the first line to begin the gap with (k=%d, %d updates)", k, len(want))
	}
	var before []byte
	for _, l := range lines[:k] {
		before = append(append(before, l...), '\n')
	}
	half := len(lines[k]) / 2
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, append(before, lines[k][:half]...), 0o600); err != nil {
		t.Fatal(err)
	}

	// The first follower: what is there is the thread's already.
	var first collect
	f, err := FollowPositions(path, SkipAll, first.add, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.Sync()
	f.Close()
	if got := first.ps; len(got) != 1 || got[0] != (ReadTo{Offset: int64(len(before))}) {
		t.Fatalf("the first follower reported %+v, want only ReadTo{%d} (the half record not counted)", got, len(before))
	}

	// Parley stopped: the record is finished and the session goes on.
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	fh.Write(append(lines[k][half:], '\n'))
	for _, l := range lines[k+1:] {
		fh.Write(append(l, '\n'))
	}
	fh.Close()
	size, _ := os.Stat(path)

	var next collect
	g, err := FollowPositions(path, int64(len(before)), next.add, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.Sync()
	g.Close()
	var got []chat.Payload
	var last ReadTo
	for _, p := range next.ps {
		if r, ok := p.(ReadTo); ok {
			last = r
			continue
		}
		got = append(got, p)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the gap's updates:\n got %+v\nwant %+v", got, want)
	}
	if last.Offset != size.Size() {
		t.Fatalf("read to %d, want the file's end %d", last.Offset, size.Size())
	}
}
