package daemon_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The dashboard's change streams are bounded at 256 open at once, as
// documented: parley's own watchers (the push watcher) do not take one of
// them, so the 256th stream opens and the 257th is told why it cannot.
func TestChangeStreamsBoundCountsOnlyStreams(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	open := func() *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", e.url()+"/api/threads/changes", nil)
		req.Header.Set("Authorization", "Bearer "+e.d.Token())
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for i := 1; i <= 256; i++ {
		resp := open()
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("change stream %d: status %d, want 200 (256 are documented)", i, resp.StatusCode)
		}
		// Read its ready event, so the stream holds its place before the next.
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "event: ready") {
			t.Fatalf("change stream %d: first line %q, %v", i, line, err)
		}
	}
	resp := open()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("change stream 257: status %d, want 503", resp.StatusCode)
	}
}
