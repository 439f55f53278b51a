package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/audit"
)

// auditTrail opens a store at a new file and records n message entries, one
// a minute from start.
func auditTrail(t *testing.T, n int, start time.Time, keep time.Duration, now *time.Time) (*Store, *audit.Recorder, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "parley.db")
	s := open(t, path)
	*now = start
	rec, err := audit.Start(t.Context(), s, audit.Options{Keep: keep, Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.Close)
	for i := range n {
		d, _ := json.Marshal(map[string]any{"message_id": fmt.Sprintf("m%d", i), "route": "web/tab"})
		rec.Record(audit.Entry{TS: start.Add(time.Duration(i) * time.Minute), Kind: audit.KindMessageSent,
			Actor: audit.ActorDevice + "d-1", Thread: "t1", Subject: fmt.Sprintf("message m%d", i), Detail: d})
	}
	if err := rec.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s, rec, path
}

func verifyErr(t *testing.T, s *Store) (int64, *audit.Mismatch) {
	t.Helper()
	n, err := audit.Verify(t.Context(), s)
	if err == nil {
		return n, nil
	}
	var m *audit.Mismatch
	if !errors.As(err, &m) {
		t.Fatalf("verify: %v", err)
	}
	return n, m
}

func TestAuditChainVerifies(t *testing.T) {
	t.Parallel()
	var now time.Time
	s, _, _ := auditTrail(t, 50, time.Unix(1_700_000_000, 0), 0, &now)
	n, m := verifyErr(t, s)
	if m != nil || n != 50 {
		t.Fatalf("an untouched trail: %d entries, mismatch %v; want 50 and none", n, m)
	}
	es, err := s.Audit(t.Context(), audit.Filter{Thread: "t1", Device: "d-1", Limit: 5})
	if err != nil || len(es) != 5 || es[0].Seq != 46 || es[4].Seq != 50 {
		t.Fatalf("the newest 5 of a thread and device: %d entries (%v), want seq 46..50", len(es), err)
	}
	if es, _ := s.Audit(t.Context(), audit.Filter{Device: "d-2"}); len(es) != 0 {
		t.Fatalf("another device's entries: %d, want none", len(es))
	}
}

func TestAuditVerifyFindsTampering(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		tamper string
		first  int64
	}{
		{"changed text", `UPDATE audit SET subject = 'message m99' WHERE seq = 7`, 7},
		{"changed detail", `UPDATE audit SET detail = '{"message_id":"m6","route":"telegram/1"}' WHERE seq = 7`, 7},
		{"changed actor", `UPDATE audit SET actor = 'device:d-2' WHERE seq = 12`, 12},
		{"deleted row", `DELETE FROM audit WHERE seq = 9`, 10},
		{"deleted first rows", `DELETE FROM audit WHERE seq <= 3`, 4},
		// Rows swapped whole, each keeping its own hashes: seq is in the hash.
		{"reordered rows", `UPDATE audit SET seq = -5 WHERE seq = 5; UPDATE audit SET seq = 5 WHERE seq = 6; UPDATE audit SET seq = 6 WHERE seq = -5`, 5},
		// Rows swapped with their seqs kept, hashes and all moved.
		{"reordered content", `UPDATE audit SET subject = CASE seq WHEN 5 THEN 'message m5' ELSE 'message m4' END,
			detail = (SELECT detail FROM audit a WHERE a.seq = CASE audit.seq WHEN 5 THEN 6 ELSE 5 END),
			hash = (SELECT hash FROM audit a WHERE a.seq = CASE audit.seq WHEN 5 THEN 6 ELSE 5 END),
			prev_hash = (SELECT prev_hash FROM audit a WHERE a.seq = CASE audit.seq WHEN 5 THEN 6 ELSE 5 END) WHERE seq IN (5, 6)`, 5},
		// A row rewritten with a fresh hash over its new content: the next
		// row's prev_hash no longer matches.
		{"rehashed row", ``, 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var now time.Time
			s, rec, path := auditTrail(t, 20, time.Unix(1_700_000_000, 0), 0, &now)
			rec.Close()
			db := raw(t, path)
			if c.tamper == "" {
				es, _ := s.Audit(t.Context(), audit.Filter{After: 6, Limit: 0})
				e := es[0]
				e.Subject = "message nobody sent"
				e.Seal(e.PrevHash)
				if _, err := db.Exec(`UPDATE audit SET subject = ?, hash = ? WHERE seq = 7`, e.Subject, e.Hash); err != nil {
					t.Fatal(err)
				}
			} else if _, err := db.Exec(c.tamper); err != nil {
				t.Fatal(err)
			}
			_, m := verifyErr(t, s)
			if m == nil {
				t.Fatalf("verify found nothing after %s", c.name)
			}
			if m.Seq != c.first {
				t.Fatalf("verify named entry %d (%s), want %d", m.Seq, m.Reason, c.first)
			}
		})
	}
}

func TestAuditPruneKeepsTheChainVerifiable(t *testing.T) {
	t.Parallel()
	start := time.Unix(1_700_000_000, 0)
	var now time.Time
	// 100 entries a minute apart, kept an hour: at start+100m the first 40
	// are older than that.
	s, rec, path := auditTrail(t, 100, start, time.Hour, &now)
	now = start.Add(100 * time.Minute)
	if err := rec.Prune(t.Context()); err != nil {
		t.Fatal(err)
	}
	es, err := s.Audit(t.Context(), audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if first, last := es[0], es[len(es)-1]; first.Seq != 41 || last.Kind != audit.KindCheckpoint || last.Seq != 101 {
		t.Fatalf("after pruning: entries %d..%d, last %q; want 41..101 ending with a checkpoint", first.Seq, last.Seq, last.Kind)
	}
	if n, m := verifyErr(t, s); m != nil || n != 61 {
		t.Fatalf("a pruned trail: %d entries, mismatch %v; want 61 and none", n, m)
	}
	// Entries after the checkpoint go on from it.
	rec.Record(audit.Entry{Kind: audit.KindSignIn, Actor: audit.ActorDevice + "d-2", Subject: "signed in"})
	now = start.Add(150 * time.Minute) // the entries up to 89m (seq 90) go
	if err := rec.Prune(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n, m := verifyErr(t, s); m != nil || n != 13 {
		t.Fatalf("pruned twice: %d entries, mismatch %v; want 13 (91..100, a checkpoint, the sign-in, a checkpoint) and none", n, m)
	}
	// Deleting more of the oldest rows, beyond where the checkpoint says
	// pruning ended, is found.
	rec.Close()
	if _, err := raw(t, path).Exec(`DELETE FROM audit WHERE seq = (SELECT min(seq) FROM audit)`); err != nil {
		t.Fatal(err)
	}
	if _, m := verifyErr(t, s); m == nil || !strings.Contains(m.Reason, "checkpoint") {
		t.Fatalf("oldest row deleted after a prune: mismatch %v, want one naming the checkpoint", m)
	}
}

func TestAuditReaderReadsWhileOpen(t *testing.T) {
	t.Parallel()
	var now time.Time
	_, _, path := auditTrail(t, 10, time.Unix(1_700_000_000, 0), 0, &now)
	r, err := OpenAuditReader(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n, err := audit.Verify(t.Context(), r); err != nil || n != 10 {
		t.Fatalf("verify through the reader: %d, %v; want 10, nil", n, err)
	}
}

// BenchmarkAuditRecord is what recording adds to the path it records: the
// hand-over to the writer (the writer's commits run beside it).
func BenchmarkAuditRecord(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "parley.db"))
	rec, err := audit.Start(b.Context(), s, audit.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Close()
	d := json.RawMessage(`{"message_id":"m1","route":"web/tab","device":"d-1","machine":"here"}`)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		rec.Record(audit.Entry{Kind: audit.KindMessageSent, Actor: "device:d-1", Thread: "t1", Subject: "message", Detail: d})
	}
	b.StopTimer()
	_ = rec.Flush(context.Background())
}

// BenchmarkAuditVerify1M verifies a trail of 1,000,000 entries read from
// SQLite (docs/benchmarks.md). Building the trail is not timed. Besides the
// wall time (inflated on a loaded machine) it reports the process's CPU time
// per verify (cpu-ms/op: user and system, every thread, GC included), which
// the machine's load does not inflate.
func BenchmarkAuditVerify1M(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "parley.db"))
	const n = 1_000_000
	var prev []byte
	batch := make([]audit.Entry, 0, 10_000)
	ts := time.Unix(1_700_000_000, 0)
	for i := int64(1); i <= n; i++ {
		e := audit.Entry{Seq: i, TS: ts.Add(time.Duration(i) * time.Second), Kind: audit.KindMessageSent, Actor: "device:d-1", Thread: "t1",
			Subject: "message", Detail: json.RawMessage(fmt.Sprintf(`{"message_id":"m%d","route":"web/tab","device":"d-1","machine":"here"}`, i))}
		e.Seal(prev)
		prev = e.Hash
		batch = append(batch, e)
		if len(batch) == cap(batch) {
			if err := s.AppendAudit(b.Context(), batch, 0); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for b.Loop() {
		got, err := audit.Verify(b.Context(), s)
		if err != nil || got != n {
			b.Fatalf("verify: %d, %v", got, err)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
}

// cpuTime is the CPU time the process has used (user and system).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
