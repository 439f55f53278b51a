package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// With only node a's credentials: a rollup header, and reply subjects aimed
// at b's keys, b's inputs and b's event subject, leave b's record, b's
// summaries and b's inputs as they were; a publish to any $KV key, a's own
// included, is refused by NATS.
func TestANodesRecordsCannotWipeOrAnswerIntoAnotherNodes(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	dataA, dataB := join(t, h, "a"), join(t, h, "b")
	errs := make(chan error, 64)
	a, err := connectAs(t, dataA, h.Addr(), "a", errs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := connectAs(t, dataB, h.Addr(), "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	const bRec, bSum = `{"node":"b","version":"real"}`, `{"id":"t1","title":"b's"}`
	record(t, b, dirSubject("b"), bRec)
	record(t, b, sumSubject("b", "t1"), bSum)
	record(t, a, dirSubject("a"), `{"node":"a"}`)
	record(t, a, sumSubject("a", "t1"), `{"id":"t1","title":"a's"}`)
	watch, err := h.nc.SubscribeSync(FromSubject("b") + ".>")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.nc.Flush(); err != nil {
		t.Fatal(err)
	}

	// Rollup headers on a's own record and summary.
	for _, subj := range []string{dirSubject("a"), sumSubject("a", "t1")} {
		m := nats.NewMsg(subj)
		m.Header.Set("Nats-Rollup", "all")
		m.Data = []byte(`{"node":"a","id":"t1"}`)
		if err := a.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	// Reply subjects aimed at b's keys, inputs and events.
	replies := []string{DirectoryKey("b"), "$KV." + threadsBucket + ".b.t1", InputSubject("b") + ".t9", FromSubject("b") + ".t.x.ev"}
	for _, reply := range replies {
		if err := a.PublishRequest(dirSubject("a"), reply, []byte(`{"node":"a"}`)); err != nil {
			t.Fatal(err)
		}
		if err := a.PublishRequest(sumSubject("a", "t1"), reply, []byte(`{"id":"t1","title":"a's"}`)); err != nil {
			t.Fatal(err)
		}
	}
	// The same straight at $KV keys (a's own): NATS refuses them.
	for _, subj := range []string{DirectoryKey("a"), "$KV." + threadsBucket + ".a.t1"} {
		m := nats.NewMsg(subj)
		m.Header.Set("Nats-Rollup", "all")
		m.Reply = DirectoryKey("b")
		m.Data = []byte(`{"node":"b"}`)
		if err := a.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
		for refused := false; !refused; {
			select {
			case err := <-errs:
				refused = errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), `"`+subj+`"`)
			case <-time.After(10 * time.Second):
				t.Fatalf("NATS did not refuse a's publish to %s", subj)
			}
		}
	}
	// The hub handles each subject's messages in order: once a's next
	// record and summary are answered, it has handled those above.
	record(t, a, dirSubject("a"), `{"node":"a"}`)
	record(t, a, sumSubject("a", "t1"), `{"id":"t1","title":"a's"}`)

	if e, err := h.nodes.Get(ctx, "b"); err != nil || string(e.Value()) != bRec {
		t.Fatalf("b's record is %q (%v), want b's own", e.Value(), err)
	}
	ths, err := h.Threads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, th := range ths {
		got[string(th.Thread.ID)] = th.Thread.Title
	}
	if len(got) != 2 || got[string(RemoteID("b", "t1"))] != "b's" || got[string(RemoteID("a", "t1"))] != "a's" {
		t.Fatalf("summaries at the hub %v, want b's and a's", got)
	}
	if info, err := h.js.Stream(ctx, InputStream("b")); err != nil || info.CachedInfo().State.Msgs != 0 {
		t.Fatalf("b's input stream: %v, %+v: something landed in it", err, info)
	}
	nodes, err := h.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Name == "b" && n.Version != "real" {
			t.Fatalf("b listed as %+v", n)
		}
	}
	// b's own event is the first thing on b's subjects.
	if err := b.Publish(FromSubject("b")+".t.x.ev", []byte("real")); err != nil {
		t.Fatal(err)
	}
	if m, err := watch.NextMsg(10 * time.Second); err != nil || string(m.Data) != "real" {
		t.Fatalf("the hub saw %v %v on b's subject, want only b's own event", m, err)
	}
}
