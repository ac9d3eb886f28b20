package vault

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/knotd/knotd/internal/ignore"
)

// FindRoot returns the vault that the directory dir belongs to, found as
// git finds a repository: dir itself when it has a .knot folder, else the
// nearest directory above it that has one, not crossing into another file
// system; dir itself when none has (knotd makes it a vault). dir is made
// absolute with symbolic links resolved, and so is the result; above says
// the vault was found above dir (dir is a folder of that vault).
//
// A folder of a vault is that vault: knotd started in it answers the
// whole vault, so that two knotd never answer one note. A vault nested
// inside another is its own vault, and the outer one leaves it alone.
func FindRoot(dir string) (root string, above bool, err error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", false, fmt.Errorf("vault: %w", err)
	}
	start, err := os.Stat(abs)
	if err != nil {
		return "", false, fmt.Errorf("vault: %w", err)
	}
	if !start.IsDir() {
		return "", false, fmt.Errorf("vault: %s is not a directory", abs)
	}
	for d := abs; ; {
		if fi, err := os.Lstat(filepath.Join(d, ignore.VaultMarker)); err == nil && fi.IsDir() {
			return d, d != abs, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return abs, false, nil
		}
		pfi, err := os.Stat(parent)
		if err != nil || !sameDevice(start, pfi) {
			return abs, false, nil
		}
		d = parent
	}
}
