// Package syncthingtest runs real Syncthing for knotd's tests: two
// instances on one machine, as two devices sharing one folder of notes, so
// that a test can watch knotd cope with what a sync tool really does
// (files that appear in bursts, conflict copies, a device that goes away).
//
// Everything stays on loopback. Each device has its own temporary home,
// its GUI and REST API on 127.0.0.1 with a random API key (and a random
// GUI password), and its sync protocol listening on 127.0.0.1 only. A
// dials B at B's explicit 127.0.0.1 address; B knows A by device ID and
// never dials (see Device). Global and local discovery, relays, NAT
// traversal, usage and crash reporting and upgrades are off: strace shows
// no socket call to any address but 127.0.0.1.
//
// The tests need the Syncthing that scripts/install-syncthing installs
// (Debian's 1.19.2 package), named by $KNOT_SYNCTHING_BIN; scripts/test
// sets it. Without it they skip, loudly, or fail under
// $KNOT_REQUIRE_SYNCTHING=1.
package syncthingtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// The environment variables Binary reads.
const (
	// EnvSyncthingBin names the syncthing binary the tests run
	// (scripts/test sets it after running scripts/install-syncthing).
	EnvSyncthingBin = "KNOT_SYNCTHING_BIN"
	// EnvRequireSyncthing set to 1 turns "Syncthing is unavailable" from a
	// skip into a failure (scripts/test sets it once the install worked).
	EnvRequireSyncthing = "KNOT_REQUIRE_SYNCTHING"
)

// VersionSeries is the Syncthing release series the harness is written
// against: scripts/install-syncthing installs 1.19.2, and Binary accepts
// any 1.19.x.
const VersionSeries = "1.19"

// installScript is the repository's installer, named in messages.
const installScript = "scripts/install-syncthing"

// versionTimeout bounds `syncthing --version`.
const versionTimeout = time.Minute

// checked caches checkBinary's verdict per path: every test of a run asks.
var checked struct {
	sync.Mutex
	m map[string]checkResult
}

type checkResult struct {
	version string
	err     error
}

// Binary returns the path of the real Syncthing, version 1.19.x, from
// $KNOT_SYNCTHING_BIN. When that is unset, or does not run, or is another
// version, Binary skips the test with a loud message saying why and how to
// get Syncthing; with $KNOT_REQUIRE_SYNCTHING=1 it fails the test instead.
func Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(EnvSyncthingBin)
	var err error
	if bin == "" {
		err = fmt.Errorf("$%s is not set", EnvSyncthingBin)
	} else {
		_, err = checkBinary(bin)
	}
	if err != nil {
		if os.Getenv(EnvRequireSyncthing) == "1" {
			t.Fatalf("syncthingtest: %s=1 but real Syncthing %s.x is unavailable: %v",
				EnvRequireSyncthing, VersionSeries, err)
		}
		t.Skipf("\n*** SKIPPED: real Syncthing not available (set %s or run %s): %v\n"+
			"*** The tests that sync a vault between two devices need Syncthing %s.x\n"+
			"*** (Debian bookworm's syncthing=1.19.2~ds1-1+b4). $%s=1 makes this a failure.",
			EnvSyncthingBin, installScript, err, VersionSeries, EnvRequireSyncthing)
	}
	return bin
}

// checkBinary runs bin --version and returns the version it reports, or
// why bin is not a Syncthing of VersionSeries.
func checkBinary(bin string) (string, error) {
	checked.Lock()
	defer checked.Unlock()
	if r, ok := checked.m[bin]; ok {
		return r.version, r.err
	}
	version, err := runVersion(bin)
	if checked.m == nil {
		checked.m = make(map[string]checkResult)
	}
	checked.m[bin] = checkResult{version, err}
	return version, err
}

func runVersion(bin string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = childEnv("")
	cmd.WaitDelay = stopTimeout
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("run %s --version: %w", bin, err)
	}
	line := strings.TrimSpace(string(out))
	version, ok := parseVersion(line)
	if !ok {
		return "", fmt.Errorf("%s --version = %q; want a line starting with \"syncthing v%s.\"", bin, line, VersionSeries)
	}
	if !strings.HasPrefix(version, VersionSeries+".") {
		return version, fmt.Errorf("%s is Syncthing %s, not %s.x (--version: %q); run %s for the pinned 1.19.2",
			bin, version, VersionSeries, line, installScript)
	}
	return version, nil
}

// parseVersion reads the version from the first line `syncthing --version`
// prints, "syncthing v1.19.2-ds1 "Fermium Flea" (go1.19.8 linux-amd64) ...",
// without the v and any suffix such as Debian's "-ds1": "1.19.2".
func parseVersion(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "syncthing v")
	if !ok {
		return "", false
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if end == -1 {
		end = len(rest)
	}
	if end == 0 {
		return "", false
	}
	return rest[:end], true
}
