package testutil

import (
	"os"
	"os/exec"
	"testing"
)

// Git returns the path of the real git, or skips the test loudly, saying
// that what (the tests that need git) did not run; with
// KNOT_REQUIRE_GIT=1 (as scripts/test sets it in CI) a missing git fails
// the test instead.
func Git(tb testing.TB, what string) string {
	tb.Helper()
	p, err := exec.LookPath("git")
	if err != nil {
		if os.Getenv("KNOT_REQUIRE_GIT") == "1" {
			tb.Fatalf("git is required (KNOT_REQUIRE_GIT=1) but not found: %v", err)
		}
		tb.Skipf("SKIPPED: the real git is not installed (%v): %s did not run", err, what)
	}
	return p
}
