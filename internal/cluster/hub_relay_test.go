package cluster

import (
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/parleyhq/parley/internal/chat"
)

// A machine slow to answer the relay's backfill holds only its own events:
// another machine's go on to the hub's viewers meanwhile, and the slow one's
// come in order, after the events it was asked for.
func TestASlowMachineHoldsOnlyItsOwnEventsAtTheHub(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	var mu sync.Mutex
	var shown []string
	stop, err := h.Relay(func(ev chat.Event) {
		mu.Lock()
		shown = append(shown, string(ev.Thread)+"#"+strconv.FormatInt(ev.Seq, 10))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	got := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), shown...)
	}
	publish := func(node string, th chat.ThreadID, seq int64) {
		t.Helper()
		m := nats.NewMsg(EventSubject(node, th))
		m.Header.Set(hdrType, chat.TypeAgentChunk)
		m.Header.Set(hdrSeq, strconv.FormatInt(seq, 10))
		m.Header.Set(hdrTS, time.Now().UTC().Format(time.RFC3339Nano))
		m.Data = []byte(`{"text":"x"}`)
		if err := h.nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	// Machine a answers its source requests only once released.
	asked, release := make(chan srcRequest, 1), make(chan struct{})
	sub, err := h.nc.Subscribe(sourceSubject("a"), func(m *nats.Msg) {
		var req srcRequest
		_ = json.Unmarshal(m.Data, &req)
		asked <- req
		<-release
		var evs []wireEvent
		for seq := req.Since + 1; seq < req.Since+1+int64(req.Limit); seq++ {
			evs = append(evs, wireEvent{Type: chat.TypeAgentChunk, Seq: seq, TS: time.Now().UTC(), Payload: []byte(`{"text":"x"}`)})
		}
		b, _ := json.Marshal(srcAnswer{Events: evs})
		_ = m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	publish("a", "t_a", 1)
	publish("a", "t_a", 4) // 2 and 3 were lost: the relay asks a for them
	req := <-asked
	if req.Op != opEvents || req.Since != 1 {
		t.Fatalf("the relay asked machine a for %+v, want the events after 1", req)
	}
	publish("b", "t_b", 1)
	waitFor(t, 10*time.Second, "machine b's event shown while a's backfill waits", func() bool {
		s := got()
		return len(s) == 2 && s[1] == "t_b@b#1"
	})
	close(release)
	waitFor(t, 10*time.Second, "machine a's events, in order", func() bool { return len(got()) == 5 })
	var ofA []string
	for _, s := range got() {
		if s != "t_b@b#1" {
			ofA = append(ofA, s)
		}
	}
	if want := []string{"t_a@a#1", "t_a@a#2", "t_a@a#3", "t_a@a#4"}; !slices.Equal(ofA, want) {
		t.Fatalf("machine a's events shown %q, want %q", ofA, want)
	}
}
