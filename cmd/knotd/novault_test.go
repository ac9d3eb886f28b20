package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// treeOf records every file and folder under dir, with its mode and
// content, so that a test can see that a command left dir untouched.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	tree := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		tree[p] = v
		return nil
	})
	require.NoError(t, err)
	return tree
}

// TestCommands_NoVaultTouchesNothing: the commands that work on a vault
// knotd made (run, retry, pause, resume, reset, status, console)
// refuse a folder, or a note in a folder, that is in no vault (no .knot
// in it or above it), with a usage error that says how to make one; they
// create nothing there (no .knot, no device heartbeat) and no folder in
// the state directory. Later commands in its subfolders then find no
// vault either.
func TestCommands_NoVaultTouchesNothing(t *testing.T) {
	dir, _ := setup(t)
	stateHome := os.Getenv("XDG_STATE_HOME")
	writeFile(t, filepath.Join(dir, "x", "note.md"), "# A note\n")
	writeFile(t, filepath.Join(dir, "x", "passwd"), "root:x:0:0\n") // a file knotd refuses
	writeFile(t, filepath.Join(dir, "x", "sub", "deep.md"), "# Deep\n")
	x := filepath.Join(dir, "x")
	note, refused, deep := filepath.Join(x, "note.md"), filepath.Join(x, "passwd"), filepath.Join(x, "sub", "deep.md")
	before, stateBefore := treeOf(t, dir), treeOf(t, stateHome)
	for _, args := range [][]string{
		{"run", note},
		{"run", refused},
		{"run", deep},
		{"run", note}, // again: the first left no vault behind to find
		{"pause", note},
		{"resume", note},
		{"resume", "--vault", x},
		{"retry", x},
		{"status", x},
		{"status", "--json", filepath.Join(x, "sub")},
		{"reset", note},
		{"console", "--no-open", x},
	} {
		code, stdout, stderr := knotd(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "is not in a knotd vault") || !strings.Contains(stderr, "knotd --once "+x) {
			t.Errorf("knotd %q: exit %d; want %d and a message that %s is in no vault\n%s%s", args, code, exitUsage, x, stdout, stderr)
		}
		require.Equal(t, before, treeOf(t, dir), "knotd %q changed the folder", args)
		require.Equal(t, stateBefore, treeOf(t, stateHome), "knotd %q changed the state directory", args)
	}
	// knotd runs lists no runs, and creates nothing either (runs --follow
	// may wait for a folder's first pass).
	if code, out, errOut := knotd(t, "runs", x); code != exitOK {
		t.Errorf("knotd runs: exit %d\n%s%s", code, out, errOut)
	}
	require.Equal(t, before, treeOf(t, dir), "knotd runs changed the folder")
	require.Equal(t, stateBefore, treeOf(t, stateHome), "knotd runs changed the state directory")
	// A pass on the folder makes it a vault; then they work.
	if code, out, errOut := knotd(t, "--once", x); code != exitOK {
		t.Fatalf("knotd --once: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := knotd(t, "status", filepath.Join(x, "sub")); code != exitOK || !strings.Contains(out, "no knotd is running for "+x) {
		t.Errorf("knotd status in a vault's subfolder: exit %d\n%s%s", code, out, errOut)
	}
}
