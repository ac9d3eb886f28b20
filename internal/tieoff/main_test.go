package tieoff

import (
	"os"
	"testing"
)

// helperEnv names the behaviour a re-executed test binary must show
// instead of running the tests (see TestAppend_PartialWriteIsUndone).
const helperEnv = "TIEOFF_TEST_HELPER"

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		runHelper(h)
		return
	}
	os.Exit(m.Run())
}
