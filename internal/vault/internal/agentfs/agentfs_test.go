package agentfs

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/vaultfs"
)

// fakeHost is a vault whose ignore rules, folders and rules keep from
// agents what its maps say (rel → why, or the folder on the way).
type fakeHost struct {
	ignored        map[string]string
	loadErr        error
	linked, nested map[string]string
	kept           map[string]string
}

func (h fakeHost) MaxSize() int64    { return 1 << 10 }
func (h fakeHost) Log() *slog.Logger { return slog.New(slog.DiscardHandler) }
func (h fakeHost) Ignored(rel string) (bool, string, error) {
	if h.loadErr != nil {
		return false, "", h.loadErr
	}
	why, ok := h.ignored[rel]
	return ok, why, nil
}
func (h fakeHost) LinkedDir(rel string) (string, string, error) {
	return h.linked[rel], h.nested[rel], nil
}
func (h fakeHost) KeptFromAgents(rel string) (bool, string) {
	why, ok := h.kept[rel]
	return ok, why
}
func (h fakeHost) SettleGuard(_ string, g *vaultfs.Guard) bool {
	changed, err := g.Settle()
	return changed || err != nil
}

// TestFS_HostRefusals: what the vault (Host) keeps from agents is refused,
// read or written, with the vault's reason, and nothing is written; a
// dry run writes nothing; the rest is read and written.
func TestFS_HostRefusals(t *testing.T) {
	host := fakeHost{
		ignored: map[string]string{"ign.md": `ignored by .gitignore:1 pattern "ign.md"`},
		linked:  map[string]string{"l/a.md": "l"},
		nested:  map[string]string{"n/a.md": "n"},
		kept:    map[string]string{"off.md": `rule path "off.md"`},
	}
	tests := []struct {
		name    string
		host    fakeHost
		dry     bool
		write   bool
		rel     string
		wantErr string // "" when the call goes through
	}{
		{name: "read", host: host, rel: "a.md"},
		{name: "write", host: host, write: true, rel: "a.md"},
		{name: "read ignored", host: host, rel: "ign.md", wantErr: `refused: ign.md is ignored by .gitignore:1 pattern "ign.md"`},
		{name: "write ignored", host: host, write: true, rel: "ign.md", wantErr: `refused: ign.md is ignored by .gitignore:1 pattern "ign.md"`},
		{name: "below a link", host: host, write: true, rel: "l/a.md", wantErr: "refused: l/a.md is below l, a symbolic link to a folder"},
		{name: "in a vault of its own", host: host, rel: "n/a.md", wantErr: "refused: n/a.md is inside n, a vault of its own"},
		{name: "kept from agents", host: host, write: true, rel: "off.md", wantErr: `refused: off.md is kept from agents: rule path "off.md"`},
		{name: "unreadable ignore files", host: fakeHost{loadErr: errors.New("permission denied")}, rel: "a.md",
			wantErr: "refused: cannot read the ignore files on the way to a.md: permission denied"},
		{name: "dry run", host: host, dry: true, write: true, rel: "a.md", wantErr: "refused: knotd runs with --dry-run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, rel := range []string{"a.md", "ign.md", "off.md", "l/a.md", "n/a.md"} {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, rel), []byte("user\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = root.Close() }()
			a := New(tt.host, Options{FS: root, Root: dir, Dry: tt.dry, Permissions: agentrun.PermFull})
			ctx := context.Background()
			p := filepath.Join(dir, filepath.FromSlash(tt.rel))
			var got string
			if tt.write {
				// Read first: a write of a file the agent did not read
				// through knotd, saved just now, is refused.
				if _, rerr := a.ReadTextFile(ctx, p, 0, 0); (rerr == nil) != (tt.wantErr == "" || tt.dry) {
					t.Fatalf("read %s before the write: %v", tt.rel, rerr)
				}
				err = a.WriteTextFile(ctx, p, "agent\n")
			} else {
				got, err = a.ReadTextFile(ctx, p, 0, 0)
			}
			a.Close()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("%s: %v", tt.rel, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("%s: %v; want an error with %q", tt.rel, err, tt.wantErr)
			case tt.wantErr == "" && !tt.write && got != "user\n":
				t.Fatalf("read %s = %q", tt.rel, got)
			}
			want := "user\n"
			if tt.write && tt.wantErr == "" {
				want = "agent\n"
			}
			if b, err := os.ReadFile(p); err != nil || string(b) != want {
				t.Fatalf("%s holds %q, %v; want %q", tt.rel, b, err, want)
			}
			if _, err := os.Lstat(filepath.Join(dir, "new.md")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a file appeared: %v", err)
			}
		})
	}
}

// TestLines: a read from a 1-based line and of at most a number of lines
// keeps the lines' endings; 0 is the first line, or all of them.
func TestLines(t *testing.T) {
	const text = "one\ntwo\nthree"
	tests := []struct {
		line, limit int
		want        string
	}{
		{0, 0, text},
		{1, 0, text},
		{2, 0, "two\nthree"},
		{3, 0, "three"},
		{4, 0, ""},
		{0, 1, "one\n"},
		{2, 1, "two\n"},
		{2, 5, "two\nthree"},
		{-1, -1, text},
	}
	for _, tt := range tests {
		if got := lines(text, tt.line, tt.limit); got != tt.want {
			t.Errorf("lines(%d, %d) = %q; want %q", tt.line, tt.limit, got, tt.want)
		}
	}
}
