package proc

import (
	"os"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
)

// TestMain lets the test binary impersonate agent CLIs: started with
// fakeagent.EnvBehaviour set, it runs that fake agent instead of the tests.
func TestMain(m *testing.M) {
	fakeagent.Main(nil)
	os.Exit(m.Run())
}
