package chat

import (
	"errors"
	"fmt"
)

// An add a caller names (a schedule, a rule): the caller chooses its id so
// that the same add sent again, its answer lost, is kept once. The kept
// thing is the record, so a retry after a restart finds it too. What both
// kinds share lives here: the id's form, the errors and their codes.

// MaxAddID bounds an id a caller chooses for an add, in bytes.
const MaxAddID = 64

// Codes of an add's and a machine's change's errors, in a node's answer to
// its hub and in the API's error answers.
const (
	CodeIDTaken    = "id_taken"   // ErrIDTaken: the add's id names another one (409)
	CodeUnanswered = "unanswered" // ErrUnanswered: it may have been done; send it again (503)
)

var (
	// ErrIDTaken is an add whose id names one kept already that another add
	// made (it differs): not a retry of that add.
	ErrIDTaken = errors.New("the id names another one")
	// ErrUnanswered is a change asked of a machine that may have had it but
	// whose answer did not come: it may have been made there.
	ErrUnanswered = errors.New("the machine's answer did not come")
)

// CheckAddID refuses an id a caller chose for an add of what ("schedule",
// "rule") that is longer than MaxAddID or holds more than letters, digits,
// "_" and "-" (an "@" would read at a cluster's hub as the machine that
// keeps it).
func CheckAddID(what, id string) error {
	if len(id) > MaxAddID {
		return BadInput("the %s's id is %d bytes: at most %d", what, len(id), MaxAddID)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return BadInput("the %s's id %q may hold only letters, digits, \"_\" and \"-\"", what, id)
		}
	}
	return nil
}

// unanswered is ErrUnanswered and, for callers that know only that, ErrAway.
type unanswered struct{ msg string }

func (e unanswered) Error() string        { return e.msg }
func (e unanswered) Is(target error) bool { return target == ErrUnanswered || target == ErrAway }

// Unanswered is ErrUnanswered for a change asked of machine whose answer did
// not come (err): done says what may have happened there and whether
// sending it again is safe.
func Unanswered(machine string, err error, done string) error {
	return unanswered{msg: fmt.Sprintf("machine %s did not answer (%v): %s", machine, err, done)}
}

// NeverHad tells a machine's error that says the request never reached it
// (no machine answers for it, ErrAway; none is joined by that name,
// ErrBadInput) from one after which it may have been done there.
func NeverHad(err error) bool {
	return errors.Is(err, ErrAway) || errors.Is(err, ErrBadInput)
}

// CodeOf is err's code in a machine's answer to its hub ("" for others):
// the kinds the hub gives back to its caller as its own (ErrorOf).
func CodeOf(err error) string {
	switch {
	case errors.Is(err, ErrNotFound):
		return CodeNotFound
	case errors.Is(err, ErrOutsideRoot):
		return CodeForbidden
	case errors.Is(err, ErrBadInput), errors.Is(err, ErrUnknownAgent):
		return CodeBadInput
	case errors.Is(err, ErrIDTaken):
		return CodeIDTaken
	}
	return ""
}

// ErrorOf is a machine's error answer (its message and CodeOf code) as an
// error of the same kind at the hub, msg naming the machine.
func ErrorOf(code, msg string) error {
	switch code {
	case CodeNotFound:
		return fmt.Errorf("%s: %w", msg, ErrNotFound)
	case CodeBadInput:
		return BadInput("%s", msg)
	case CodeForbidden:
		return fmt.Errorf("%s: %w", msg, ErrOutsideRoot)
	case CodeIDTaken:
		return fmt.Errorf("%s: %w", msg, ErrIDTaken)
	}
	return errors.New(msg)
}
