package vault

import (
	"fmt"
	"os"
	"testing"
)

// helperEnv names the environment variable that turns the test binary
// into one of the helper processes below (the os/exec test pattern).
const helperEnv = "KNOTD_VAULT_TEST_HELPER"

// helpers are the programs the test binary can impersonate, by name.
var helpers = map[string]func() int{
	"holdlock": helperHoldLock,
}

func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		h, ok := helpers[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
			os.Exit(2)
		}
		os.Exit(h())
	}
	os.Exit(m.Run())
}
