package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"time"

	"github.com/parleyhq/parley/internal/backoff"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/schedule"
)

// An add whose answer is lost is sent again, the same (its id), a few
// times: the machine that keeps it makes it once.
var addAgain = backoff.Policy{Min: 500 * time.Millisecond, Max: 4 * time.Second, Jitter: backoff.Jitter{Low: 0.8, Width: 0.4}}

const addTries = 4

// addSchedule sends the add sp (which names its id) until an answer comes,
// at most addTries times, saying on w each time an answer was lost.
func addSchedule(ctx context.Context, api client.API, sp schedule.Spec, w io.Writer) (schedule.Schedule, error) {
	for try := 1; ; try++ {
		var out struct {
			Schedule schedule.Schedule `json:"schedule"`
			Existed  bool              `json:"existed"`
		}
		err := api.Call(ctx, http.MethodPost, "/api/schedules", sp, &out)
		switch {
		case err == nil && try > 1 && out.Existed:
			fmt.Fprintf(w, "an earlier try had made it: one schedule, %s\n", out.Schedule.ID)
		case err == nil && try > 1:
			fmt.Fprintf(w, "made now, by try %d: one schedule, %s\n", try, out.Schedule.ID)
		}
		if err == nil {
			return out.Schedule, nil
		}
		if !answerLost(ctx, err) {
			return schedule.Schedule{}, err
		}
		if try == addTries {
			return schedule.Schedule{}, fmt.Errorf("%w\nno answer after %d tries: the schedule may have been made; "+
				"the same command with --id %s sends it again safely (made once), or `parley schedule list` shows it", err, try, sp.ID)
		}
		fmt.Fprintf(w, "the add's answer was lost (%v); sending the same add (id %s) again: it is made once\n", err, sp.ID)
		select {
		case <-time.After(addAgain.Delay(try - 1)):
		case <-ctx.Done():
			return schedule.Schedule{}, ctx.Err()
		}
	}
}

// answerLost tells an add whose answer did not come (the connection cut,
// or the machine that keeps it did not answer the hub) from one refused or
// never sent.
func answerLost(ctx context.Context, err error) bool {
	var ae *client.APIError
	switch {
	case ctx.Err() != nil, errors.Is(err, syscall.ECONNREFUSED):
		return false
	case errors.As(err, &ae):
		return ae.Code == schedule.CodeUnanswered
	}
	return true
}
