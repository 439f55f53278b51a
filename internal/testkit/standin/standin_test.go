package standin

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestDurationRoundTrip(t *testing.T) {
	t.Parallel()
	type block struct {
		Delay Duration `json:"delay"`
	}
	b, err := json.Marshal(block{Delay: Duration(50 * time.Millisecond)})
	if err != nil || string(b) != `{"delay":"50ms"}` {
		t.Fatalf("marshal: %s, %v", b, err)
	}
	var back block
	if err := json.Unmarshal(b, &back); err != nil || time.Duration(back.Delay) != 50*time.Millisecond {
		t.Fatalf("unmarshal: %v, %v", back.Delay, err)
	}
	if err := json.Unmarshal([]byte(`{"delay":1500}`), &back); err != nil || back.Delay != 1500 {
		t.Fatalf("nanoseconds: %v, %v", back.Delay, err)
	}
	for _, bad := range []string{`{"delay":"soon"}`, `{"delay":true}`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestLogOrderAndChanged(t *testing.T) {
	t.Parallel()
	var l Log[int]
	if len(l.All()) != 0 {
		t.Fatal("zero log not empty")
	}
	ch := l.Changed()
	if l.Changed() != ch {
		t.Fatal("Changed without an Add gave a new channel")
	}
	select {
	case <-ch:
		t.Fatal("closed before any Add")
	default:
	}
	l.Add(1)
	select {
	case <-ch:
	default:
		t.Fatal("not closed by Add")
	}
	next := l.Changed()
	select {
	case <-next:
		t.Fatal("the next channel is already closed")
	default:
	}
	l.Add(2)
	l.Add(3)
	got := l.All()
	if !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("All = %v", got)
	}
	got[0] = 99 // a copy
	if l.All()[0] != 1 {
		t.Fatal("All shares its slice")
	}
}

func TestUses(t *testing.T) {
	t.Parallel()
	var u Uses
	u.Reset(2)
	first, second, third := u.Take(0, 2), u.Take(0, 2), u.Take(0, 2)
	if !first || !second || third {
		t.Fatal("rule 0 (limit 2) not used up after two answers")
	}
	for range 5 {
		if !u.Take(1, 0) {
			t.Fatal("unlimited rule used up")
		}
	}
	u.Reset(2)
	if !u.Take(0, 2) {
		t.Fatal("Reset kept the counts")
	}
}

func TestSplit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s    string
		n    int
		want []string
	}{
		{"hello", 0, []string{"hello"}},
		{"hello", 2, []string{"he", "llo"}},
		{"héé", 9, []string{"h", "é", "é"}},
		{"", 3, []string{""}},
	} {
		if got := Split(c.s, c.n); !slices.Equal(got, c.want) {
			t.Errorf("Split(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestWait(t *testing.T) {
	t.Parallel()
	if !Wait(context.Background(), time.Millisecond) {
		t.Fatal("live context reported gone")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Wait(ctx, time.Hour) || Wait(ctx, 0) {
		t.Fatal("cancelled context reported live")
	}
}

type rec struct{ l *Log[string] }

func (r rec) Requests() []string       { return r.l.All() }
func (r rec) Changed() <-chan struct{} { return r.l.Changed() }

func TestListenRecordFollow(t *testing.T) {
	t.Parallel()
	var l Log[string]
	hs, err := Listen("127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.Add(r.URL.Path)
		WriteJSON(w, http.StatusTeapot, map[string]int{"n": 1})
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer Close(hs)

	ctx, cancel := context.WithCancel(context.Background())
	seen := make(chan string)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Follow(ctx, rec{&l}, func(p string) { seen <- p })
	}()
	for _, p := range []string{"/a", "/b"} {
		resp, err := http.Get(hs.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTeapot || resp.Header.Get("Content-Type") != "application/json" || string(body) != "{\"n\":1}\n" {
			t.Fatalf("%s: %d %q %q", p, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		select {
		case got := <-seen:
			if got != p {
				t.Fatalf("Follow saw %q, want %q", got, p)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Follow did not see %s", p)
		}
	}
	cancel()
	<-done
}

func TestConfigFiles(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "home", ".agent", "settings.json")
	if err := WriteConfig(path, map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	var v struct{ A int }
	if err := LoadJSON(path, &v); err != nil || v.A != 1 {
		t.Fatalf("LoadJSON: %+v, %v", v, err)
	}
	if err := LoadJSON(filepath.Join(t.TempDir(), "none.json"), &v); err == nil {
		t.Fatal("missing file: no error")
	}
	var buf bytes.Buffer
	printEnv(&buf, "http://x", []string{"HOME=/h"})
	if buf.String() != "http://x\nexport HOME=/h\n" {
		t.Fatalf("printEnv: %q", buf.String())
	}
}
