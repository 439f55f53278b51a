package stream

import (
	"testing"

	"go.uber.org/goleak"
)

// Every session's goroutines (reader, writer, waiter) end with its process.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
