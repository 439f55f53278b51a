//go:build e2e

package cluster_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/schedule"
	"github.com/parleyhq/parley/internal/testkit"
)

// rest makes a JSON request to m and returns the status and the body.
func (m *machine) rest(method, path string, body any) (int, []byte) {
	m.t.Helper()
	var rd io.Reader = http.NoBody
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://"+m.d.Addr()+path, rd)
	req.Header.Set("Authorization", "Bearer "+m.d.Token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

type scheduleList struct {
	Schedules []schedule.Schedule `json:"schedules"`
	Unlisted  []schedule.Unlisted `json:"unlisted"`
}

func (l scheduleList) find(id string) *schedule.Schedule {
	for i := range l.Schedules {
		if l.Schedules[i].ID == id {
			return &l.Schedules[i]
		}
	}
	return nil
}

// A schedule added at the hub with machine b is kept in b's own store and
// run by b's agent (Claude Code against the scripted API), at its time;
// the hub's list shows it with its node and its run's thread as the hub
// names it; an add b would refuse is refused as b says; pause and remove
// at the hub reach b. With b away, an add for
// it is refused saying so (nothing is kept anywhere) and the hub's list
// says b's schedules are not listed.
func TestAScheduleAddedAtTheHubRunsOnItsNode(t *testing.T) {
	r := newRig(t)
	at := time.Now().Add(10 * time.Second).UTC().Format(time.RFC3339)
	st, b := r.hub.rest("POST", "/api/schedules", map[string]any{"agent": "claude", "cwd": r.work, "at": at,
		"machine": "b", "text": "hello", "name": "greet"})
	if st != 200 {
		t.Fatalf("add at the hub for b: %d %s", st, b)
	}
	var added struct{ Schedule schedule.Schedule }
	if err := json.Unmarshal(b, &added); err != nil {
		t.Fatal(err)
	}
	local, node, _ := strings.Cut(added.Schedule.ID, "@")
	if node != "b" || added.Schedule.Node != "b" || added.Schedule.NextRun == nil {
		t.Fatalf("the hub answered %+v, want b's schedule with its next run", added.Schedule)
	}
	var atB, atHub scheduleList
	r.node.get("/api/schedules", &atB)
	if atB.find(local) == nil {
		t.Fatalf("b's own list %+v lacks %s: not kept on b", atB.Schedules, local)
	}

	// It runs on b: its last run names the thread at the hub as b's thread.
	testkit.Eventually(t, 60*time.Second, func() bool {
		r.hub.get("/api/schedules", &atHub)
		s := atHub.find(added.Schedule.ID)
		return s != nil && s.LastRun != nil
	}, "the run, in the hub's list")
	s := atHub.find(added.Schedule.ID)
	if n, th, ok := cluster.SplitRemoteID(s.LastThread); !ok || n != "b" || th == "" || s.LastError != "" || s.Node != "b" {
		t.Fatalf("the hub lists %+v, want a run on b's thread without error", *s)
	}
	testkit.Eventually(t, wait, func() bool {
		var th struct {
			Events []struct{ Type string } `json:"events"`
		}
		r.hub.get("/api/threads/"+string(s.LastThread)+"/events", &th)
		for _, e := range th.Events {
			if e.Type == chat.TypePromptDone {
				return true
			}
		}
		return false
	}, "b's agent answered the run")

	// b judges an add as its own: a directory outside its roots is refused
	// as it would be there.
	if st, b := r.hub.rest("POST", "/api/schedules", map[string]any{"agent": "claude", "cwd": "/", "every": "1h",
		"machine": "b", "text": "hello"}); st != http.StatusForbidden || !strings.Contains(string(b), "machine b") {
		t.Fatalf("add for b outside its roots: %d %s", st, b)
	}

	// Pause and remove at the hub reach b.
	if st, b := r.hub.rest("POST", "/api/schedules/"+added.Schedule.ID+"/pause", nil); st != 200 {
		t.Fatalf("pause at the hub: %d %s", st, b)
	}
	r.node.get("/api/schedules", &atB)
	if s := atB.find(local); s == nil || !s.Paused {
		t.Fatalf("b lists %+v after a pause at the hub", s)
	}
	if st, b := r.hub.rest("DELETE", "/api/schedules/"+added.Schedule.ID, nil); st != 200 {
		t.Fatalf("remove at the hub: %d %s", st, b)
	}
	r.node.get("/api/schedules", &atB)
	if atB.find(local) != nil {
		t.Fatalf("b still lists %s after a remove at the hub", local)
	}
	if st, _ := r.hub.rest("DELETE", "/api/schedules/"+added.Schedule.ID, nil); st != 404 {
		t.Fatalf("a second remove at the hub: %d, want 404", st)
	}

	// b away: an add for it is refused, saying so; the list says so too.
	r.node.stop()
	st, b = r.hub.rest("POST", "/api/schedules", map[string]any{"agent": "claude", "cwd": r.work, "every": "1h",
		"machine": "b", "text": "hello"})
	if st != http.StatusServiceUnavailable || !strings.Contains(string(b), "machine b does not answer") {
		t.Fatalf("add for b while it is away: %d %s", st, b)
	}
	r.hub.get("/api/schedules", &atHub)
	if len(atHub.Unlisted) != 1 || atHub.Unlisted[0].Node != "b" || len(atHub.Schedules) != 0 {
		t.Fatalf("the hub's list with b away: %+v", atHub)
	}
}
