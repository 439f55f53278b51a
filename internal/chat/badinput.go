package chat

import "fmt"

// badInput refuses a request in words its sender can act on.
type badInput string

func (e badInput) Error() string        { return string(e) }
func (e badInput) Is(target error) bool { return target == ErrBadInput }

// BadInput is a refusal of what a request holds, worded for its sender, and
// ErrBadInput to errors.Is (a 400 at the API). Its text is the message
// alone, with no "bad input:" before it.
func BadInput(format string, args ...any) error { return badInput(fmt.Sprintf(format, args...)) }
