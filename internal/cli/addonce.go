package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"time"

	"github.com/parleyhq/parley/internal/backoff"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
)

// An add whose answer is lost is sent again, the same (its id), a few
// times: the machine that keeps it makes it once.
var addAgain = backoff.Policy{Min: 500 * time.Millisecond, Max: 4 * time.Second, Jitter: backoff.Jitter{Low: 0.8, Width: 0.4}}

const addTries = 4

// addKind names what an add makes, for its answer and the words said.
type addKind struct {
	what string // "schedule", "rule": also the answer's key
	list string // the command that lists them
}

// sendAdd posts the add body, which names its id, to path until an answer
// comes, at most addTries times, saying on w each time an answer was lost;
// the answer's k.what is the made (or kept) one, named by its "id".
func sendAdd[T any](ctx context.Context, api client.API, path string, body any, id string, k addKind, w io.Writer) (T, error) {
	var zero T
	for try := 1; ; try++ {
		var raw json.RawMessage
		err := api.Call(ctx, http.MethodPost, path, body, &raw)
		if err == nil {
			var ans map[string]json.RawMessage
			var made struct {
				ID string `json:"id"`
			}
			var existed bool
			var out T
			if err := errors.Join(json.Unmarshal(raw, &ans), json.Unmarshal(ans[k.what], &out), json.Unmarshal(ans[k.what], &made)); err != nil {
				return zero, fmt.Errorf("the answer to an add is not a %s: %w", k.what, err)
			}
			_ = json.Unmarshal(ans["existed"], &existed)
			switch {
			case try > 1 && existed:
				fmt.Fprintf(w, "an earlier try had made it: one %s, %s\n", k.what, made.ID)
			case try > 1:
				fmt.Fprintf(w, "made now, by try %d: one %s, %s\n", try, k.what, made.ID)
			}
			return out, nil
		}
		if !answerLost(ctx, err) {
			return zero, err
		}
		if try == addTries {
			return zero, fmt.Errorf("%w\nno answer after %d tries: the %s may have been made; "+
				"the same command with --id %s sends it again safely (made once), or `%s` shows it", err, try, k.what, id, k.list)
		}
		fmt.Fprintf(w, "the add's answer was lost (%v); sending the same add (id %s) again: it is made once\n", err, id)
		select {
		case <-time.After(addAgain.Delay(try - 1)):
		case <-ctx.Done():
			return zero, ctx.Err()
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
		return ae.Code == chat.CodeUnanswered
	}
	return true
}
