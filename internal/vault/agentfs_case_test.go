package vault

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun"
)

// foldingLstat is an Lstat of the vault root that folds case, as the file
// systems of macOS and Windows do: a name no folder lists reaches the
// entry that differs from it only in case.
func foldingLstat(root *os.Root) func(string) (fs.FileInfo, error) {
	return func(name string) (fs.FileInfo, error) {
		real := ""
		for _, el := range strings.Split(name, "/") {
			d, err := root.Open(filepath.FromSlash(cmpOr(real, ".")))
			if err != nil {
				return nil, err
			}
			names, err := d.Readdirnames(-1)
			_ = d.Close() // read only
			if err != nil {
				return nil, err
			}
			match := ""
			for _, n := range names {
				if n == el || match == "" && strings.EqualFold(n, el) {
					match = n
				}
			}
			if match == "" {
				return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrNotExist}
			}
			real = path.Join(real, match)
		}
		return root.Lstat(filepath.FromSlash(real))
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TestAgentFS_CaseFolding: an agent that spells a path in another case
// reaches, on a file system that folds case (macOS, Windows: simulated
// here where the file system does not), the same file: it is neither
// refused wrongly nor a way around what the user keeps from agents
// (ignored paths, mode: off rules, Obsidian's Excluded files, .knot/) or
// around the files knotd alone writes (tie-offs, ignore files), which are
// refused in any case on every system. Before knotd matched the names as
// the folders list them, PRIVATE/p.md read the note a mode: off rule
// keeps from agents, and .KNOT/, A.TIEOFF.md and .GITIGNORE were written.
func TestAgentFS_CaseFolding(t *testing.T) {
	for _, folds := range []bool{false, true} {
		t.Run(map[bool]string{false: "case-sensitive", true: "folding case"}[folds], func(t *testing.T) {
			e, v, _ := agentFSEnv(t)
			ctx := context.Background()
			for _, tc := range []struct {
				op, rel   string
				foldsOnly bool
				want      string // the content read, or the error's text
			}{
				{op: "read", rel: "NOTES/A.md", foldsOnly: true, want: "one\ntwo\nthree\nfour\n"},
				{op: "read", rel: "NOTES/SECRET.md", foldsOnly: true, want: "notes/secret.md is ignored"},
				{op: "read", rel: "PRIVATE/p.md", foldsOnly: true, want: "refused: private/p.md is kept from agents"},
				{op: "read", rel: "Excluded/X.md", foldsOnly: true, want: "refused: excluded/x.md is"},
				{op: "read", rel: ".KNOT/config.yaml", want: "refused: knotd's own files"},
				{op: "write", rel: ".Knot/state.db", want: "refused: knotd's own files"},
				{op: "write", rel: "notes/A.TIEOFF.md", want: "is a tie-off"},
				{op: "write", rel: "notes/b.TieOff.md", want: "is a tie-off"},
				{op: "write", rel: ".GITIGNORE", want: "is an ignore file"},
				{op: "write", rel: "notes/.KnotIgnore", want: "is an ignore file"},
				{op: "write", rel: "NOTES/new.md", foldsOnly: true, want: ""},
			} {
				if tc.foldsOnly && !folds {
					continue
				}
				a := v.newAgentFS(agentrun.Agent{Permissions: agentrun.PermFull})
				if folds {
					a.Lstat = foldingLstat(v.fs)
				}
				var got string
				var err error
				if tc.op == "read" {
					got, err = a.ReadTextFile(ctx, e.abs(tc.rel), 0, 0)
				} else {
					err = a.WriteTextFile(ctx, e.abs(tc.rel), "agent\n")
				}
				a.Close()
				switch {
				case strings.HasPrefix(tc.want, "refused") || strings.HasPrefix(tc.want, "is ") || strings.Contains(tc.want, " is "):
					if err == nil || !strings.Contains(err.Error(), tc.want) {
						t.Errorf("%s %s = %q, %v; want an error with %q", tc.op, tc.rel, got, err, tc.want)
					}
				case err != nil:
					t.Errorf("%s %s: %v; want it to go through", tc.op, tc.rel, err)
				case tc.op == "read" && got != tc.want:
					t.Errorf("read %s = %q; want %q", tc.rel, got, tc.want)
				}
			}
			for _, rel := range []string{".KNOT", ".Knot", "notes/A.TIEOFF.md", "notes/b.TieOff.md", ".GITIGNORE", "notes/.KnotIgnore"} {
				if _, err := os.Lstat(e.abs(rel)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s was created (%v)", rel, err)
				}
			}
			if folds {
				if got := e.read("notes/new.md"); got != "agent\n" {
					t.Errorf("notes/new.md = %q; want the write to NOTES/new.md in the folder notes", got)
				}
			}
		})
	}
}
