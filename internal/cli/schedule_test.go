package cli_test

import (
	"context"
	"net/http"
	"strings"
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
	// The first add reaches the daemon; its answer does not come back.
	data, adds := loseFirstAnswer(t, d, "/api/schedules")
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
