package agentrun

import (
	"flag"
	"os"
	"testing"

	"github.com/knotd/knotd/agentrun/fakeagent"
)

// TestMain lets the test binary impersonate agent CLIs: started with
// fakeagent.EnvBehaviour set, it runs that fake agent instead of the tests.
func TestMain(m *testing.M) {
	fakeagent.Main(nil)
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files under testdata/")
	}
	os.Exit(m.Run())
}
