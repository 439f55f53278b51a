package cli_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/schedule"
	"github.com/parleyhq/parley/internal/testkit/scriptd"
)

// parley schedule add whose first answer is lost (the daemon kept the
// schedule, then the connection was cut before its answer) sends the same
// add again itself, says so, and the daemon keeps one schedule: the one
// the command prints.
func TestScheduleAddSentAgainAfterALostAnswerIsMadeOnce(t *testing.T) {
	t.Parallel()
	r := scriptd.Start(t, nil)
	d := r.D()
	target, _ := url.Parse("http://" + d.Addr())
	pass := httputil.NewSingleHostReverseProxy(target)
	var adds atomic.Int32
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/api/schedules" || adds.Add(1) > 1 {
			pass.ServeHTTP(w, req)
			return
		}
		// The first add reaches the daemon; its answer does not come back.
		body, _ := io.ReadAll(req.Body)
		fwd, _ := http.NewRequest(req.Method, target.String()+req.URL.Path, bytes.NewReader(body))
		fwd.Header = req.Header.Clone()
		resp, err := http.DefaultClient.Do(fwd)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("the first add at the daemon: %v %v", resp, err)
		} else {
			resp.Body.Close()
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	}))
	defer cut.Close()

	// The CLI finds the daemon, through the cutting proxy, by its data
	// directory (as it finds the local parley).
	data := t.TempDir()
	for name, v := range map[string]string{"addr": strings.TrimPrefix(cut.URL, "http://"), "token": d.Token()} {
		if err := os.WriteFile(filepath.Join(data, name), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := parley("schedule", "add", "--data", data, "--agent", "echo", "--cwd", r.Work, "--every", "2h", "run the tests")
	if code != 0 {
		t.Fatalf("schedule add: %d %q %q", code, out, errs)
	}
	if !strings.Contains(errs, "answer was lost") || !strings.Contains(errs, "an earlier try had made it") {
		t.Errorf("stderr %q, want it to say the answer was lost and the first try made it", errs)
	}
	var list struct {
		Schedules []schedule.Schedule `json:"schedules"`
	}
	api := client.API{Server: "http://" + d.Addr(), Token: d.Token()}
	if err := api.Call(context.Background(), http.MethodGet, "/api/schedules", nil, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Schedules) != 1 || !strings.HasPrefix(out, list.Schedules[0].ID+": next run") || adds.Load() != 2 {
		t.Fatalf("the daemon keeps %+v after %d adds; the command printed %q: want one schedule, the one printed", list.Schedules, adds.Load(), out)
	}
}
