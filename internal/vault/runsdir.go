package vault

import "github.com/knotd/knotd/internal/statedir"

// RunsDir returns the directory of the run transcripts of the vault at
// root (absolute, symbolic links resolved): one <run-id>.jsonl per run
// (see package transcript), in the vault's folder of the state directory
// home ("" for statedir.Home()). ok is false when knotd never ran on the
// vault on this machine.
func RunsDir(home, root string) (dir string, ok bool, err error) {
	f, ok, err := folderOf(home, root)
	if !ok {
		return "", false, err
	}
	return f.Runs(), true, nil
}

// folderOf returns the folder of the vault at root in the state directory
// home ("" for the user's); ok is false when knotd never ran on the vault
// on this machine (then the folder is zero).
func folderOf(home, root string) (f statedir.Folder, ok bool, err error) {
	if home == "" {
		if home, err = statedir.Home(); err != nil {
			return f, false, err
		}
	}
	f, ok, err = statedir.Find(home, root)
	if err != nil || !ok {
		return statedir.Folder{}, false, err
	}
	return f, true, nil
}
