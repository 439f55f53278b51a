package cluster

import (
	"testing"

	"go.uber.org/goleak"
)

// Every hub, link and connection a test starts is gone when it ends.
//
// Tests run side by side (t.Parallel) but for those that restart a hub on the
// address it had (a restart, a fuller disk, a used token kept across one):
// they run alone, so that no other test's listener takes the port between.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
