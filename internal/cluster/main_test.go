package cluster

import (
	"testing"

	"go.uber.org/goleak"
)

// Every hub, link and connection a test starts is gone when it ends.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
