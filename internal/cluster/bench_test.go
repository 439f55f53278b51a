package cluster

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
)

// go test -run '^$' -bench . -benchtime 200x ./internal/cluster/ (docs/benchmarks.md)

// BenchmarkJoin is a whole join: a token made from the hub's data directory,
// a TLS dial pinned to its CA, the registration, the user reload.
func BenchmarkJoin(b *testing.B) {
	h, err := StartHub(b.Context(), HubOptions{DataDir: b.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	for i := 0; b.Loop(); i++ {
		tok, err := IssueToken(h.opt.DataDir, h.Addr(), "", time.Now().Add(time.Minute))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Join(b.Context(), b.TempDir(), tok, fmt.Sprintf("n%d", i), "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHeartbeat is one directory record written by a linked node and
// acknowledged by JetStream, over TLS on loopback.
func BenchmarkHeartbeat(b *testing.B) {
	h, err := StartHub(b.Context(), HubOptions{DataDir: b.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	data := b.TempDir()
	tok, _ := IssueToken(h.opt.DataDir, h.Addr(), "", time.Now().Add(time.Minute))
	if _, err := Join(b.Context(), data, tok, "n", "bench"); err != nil {
		b.Fatal(err)
	}
	l, err := Dial(LinkOptions{DataDir: data, Hub: h.Addr(), Node: "n", Heartbeat: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for !l.Connected() {
		time.Sleep(time.Millisecond)
	}
	for b.Loop() {
		if err := l.write(false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRevokeAmong100Nodes is a revoke (user reload, record purge, stream
// delete) on a hub with 100 joined nodes; each iteration joins one first,
// outside the timer.
func BenchmarkRevokeAmong100Nodes(b *testing.B) {
	h, err := StartHub(b.Context(), HubOptions{DataDir: b.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	join := func(name string) {
		tok, _ := IssueToken(h.opt.DataDir, h.Addr(), "", time.Now().Add(time.Minute))
		if _, err := Join(b.Context(), b.TempDir(), tok, name, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 99 {
		join(fmt.Sprintf("n%d", i))
	}
	for b.Loop() {
		b.StopTimer()
		join("victim")
		b.StartTimer()
		if err := h.Revoke(b.Context(), "victim"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMachinesOf20Nodes is one Machines answer (what `parley nodes`,
// /api/nodes and, without the counts, every socket connect and /api/agents
// read) with 20 joined nodes, each with a record and 10 thread summaries.
func BenchmarkMachinesOf20Nodes(b *testing.B) {
	h, err := StartHub(b.Context(), HubOptions{DataDir: b.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	for i := range 20 {
		node := fmt.Sprintf("n%d", i)
		tok, _ := IssueToken(h.opt.DataDir, h.Addr(), "", time.Now().Add(time.Minute))
		if _, err := Join(b.Context(), b.TempDir(), tok, node, "bench"); err != nil {
			b.Fatal(err)
		}
		rec, _ := json.Marshal(Record{Node: node, Agents: []string{"claude"}, Every: time.Hour, Since: time.Now()})
		if err := h.writeRecord(b.Context(), node, nil, rec); err != nil {
			b.Fatal(err)
		}
		for j := range 10 {
			id := chat.ThreadID(fmt.Sprintf("t%d", j))
			sum, _ := json.Marshal(toWire(chat.Thread{ID: id}))
			if err := h.writeSummary(b.Context(), h.threads, node, string(id), sum); err != nil {
				b.Fatal(err)
			}
		}
	}
	for b.Loop() {
		ms, err := h.Machines(b.Context())
		if err != nil || len(ms) != 20 || ms[0].Threads != 10 {
			b.Fatalf("machines %+v, %v", ms, err)
		}
	}
}
