package schedule

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a test starts must have ended when the tests are over.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
