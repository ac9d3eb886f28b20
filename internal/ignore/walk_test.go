package ignore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/knotd/knotd/internal/strand"
	"github.com/stretchr/testify/require"
)

func TestRules_Walk(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"a.md", "notes/b.md", "notes/drafts/c.md", "notes/skip/d.md", "notes/z.md",
		".obsidian/app.md", "node_modules/m.md", "x/y/e.md"} {
		mustWrite(t, filepath.Join(root, filepath.FromSlash(f)), "x")
	}
	mustWrite(t, filepath.Join(root, "notes/.gitignore"), "drafts/\n")
	if err := os.Symlink(filepath.Join(root, "notes"), filepath.Join(root, "link")); err != nil {
		t.Skipf("symlinks not available: %v", err)
	}
	tests := []struct {
		name string
		dir  string
		fn   func(rel string, d fs.DirEntry) error
		want []string
	}{
		{"whole vault", "", nil, []string{"", "a.md", "link", "notes", "notes/.gitignore", "notes/b.md",
			"notes/skip", "notes/skip/d.md", "notes/z.md", "x", "x/y", "x/y/e.md"}},
		{"subtree, with the ancestors' ignore files", "notes", nil, []string{"notes", "notes/.gitignore",
			"notes/b.md", "notes/skip", "notes/skip/d.md", "notes/z.md"}},
		{"ignored start", "notes/drafts", nil, nil},
		{"SkipDir on a directory", "", func(rel string, d fs.DirEntry) error {
			if rel == "notes/skip" || rel == "x" {
				return fs.SkipDir
			}
			return nil
		}, []string{"", "a.md", "link", "notes", "notes/.gitignore", "notes/b.md", "notes/skip", "notes/z.md", "x"}},
		{"SkipDir on a file skips the rest of its directory", "notes", func(rel string, d fs.DirEntry) error {
			if rel == "notes/b.md" {
				return fs.SkipDir
			}
			return nil
		}, []string{"notes", "notes/.gitignore", "notes/b.md"}},
		{"SkipAll", "", func(rel string, d fs.DirEntry) error {
			if rel == "notes" {
				return fs.SkipAll
			}
			return nil
		}, []string{"", "a.md", "link", "notes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			r := &Rules{}
			err := r.Walk(root, tt.dir, WalkOptions{}, func(rel string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				got = append(got, rel)
				if tt.fn != nil {
					return tt.fn(rel, d)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("Walk(%q) = %v", tt.dir, err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Walk(%q) visited %q; want %q", tt.dir, got, tt.want)
			}
		})
	}
}

func TestRules_WalkErrors(t *testing.T) {
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "a.md"), "x")
	var calls []string
	err := (&Rules{}).Walk(root, "missing", WalkOptions{}, func(rel string, d fs.DirEntry, err error) error {
		calls = append(calls, rel)
		return err
	})
	if !errors.Is(err, fs.ErrNotExist) || !slices.Equal(calls, []string{"missing"}) {
		t.Errorf("Walk(missing) = %v after calls %q; want ErrNotExist after [missing]", err, calls)
	}
	stop := errors.New("stop")
	err = (&Rules{}).Walk(root, "", WalkOptions{}, func(rel string, d fs.DirEntry, err error) error {
		if rel == "a.md" {
			return stop
		}
		return err
	})
	if !errors.Is(err, stop) {
		t.Errorf("Walk = %v; want fn's error", err)
	}
	if err := (&Rules{}).Walk(root, "../x", WalkOptions{}, func(string, fs.DirEntry, error) error { return nil }); err == nil {
		t.Errorf("Walk(../x) = nil; want an error")
	}
}

func TestRules_LoadThenExplain(t *testing.T) {
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, ".gitignore"), "*.tmp.md\n")
	mustWrite(t, filepath.Join(root, "a/.knotignore"), "secret/\n")
	mustWrite(t, filepath.Join(root, "a/secret/.gitignore"), "!*\n") // never read: inside an ignored directory
	r := &Rules{}
	if err := r.Load(root, "a/secret/b/c.md"); err != nil {
		t.Fatalf("Load: %v", err)
	}
	for _, tt := range []struct {
		path   string
		reason string
	}{
		{"a/secret/b/c.md", `ignored by a/.knotignore:1 pattern "secret/" (matches directory a/secret)`},
		{"x/y.tmp.md", `ignored by .gitignore:1 pattern "*.tmp.md"`},
	} {
		if ign, why := r.Explain(tt.path); !ign || why != tt.reason {
			t.Errorf("Explain(%q) = %v, %q; want true, %q", tt.path, ign, why, tt.reason)
		}
	}
	// An ignore file removed from disk is dropped on the next Load.
	require.NoError(t, os.Remove(filepath.Join(root, "a/.knotignore")))
	if err := r.Load(root, "a/secret/b/c.md"); err != nil {
		t.Fatalf("Load: %v", err)
	}
	if ign, why := r.Explain("a/secret/b/c.md"); ign {
		t.Errorf("Explain after removing .knotignore = true, %q; want not ignored", why)
	}
}

// FuzzRules feeds arbitrary ignore files and paths: nothing panics, and
// Ignored and Explain agree.
func FuzzRules(f *testing.F) {
	f.Add("*.md\n!keep.md\n", "sub", "drafts/\n**/x\n", "sub/drafts/keep.md", false)
	f.Add("a/**/b\n", "", "[!a-c]x\n\\#y\n", "a/q/b/c", true)
	f.Add("foo/**\n!foo/k\n", "foo", "", "foo/k", false)
	f.Fuzz(func(t *testing.T, rootFile, dir, dirFile, rel string, isDir bool) {
		r := &Rules{Patterns: []string{"*.tmp"}}
		require.NoError(t, r.setFile("", ".gitignore", []byte(rootFile)))
		if strand.ValidateRel(dir) == nil {
			require.NoError(t, r.setFile(dir, ".knotignore", []byte(dirFile)))
		}
		ignored := r.Ignored(rel, isDir)
		p := rel
		if isDir {
			p += "/"
		}
		if strand.ValidateRel(rel) != nil || rel == "" {
			return
		}
		if e, why := r.Explain(p); e != ignored {
			t.Errorf("Ignored(%q, %v) = %v but Explain(%q) = %v, %q", rel, isDir, ignored, p, e, why)
		}
	})
}

// TestWalk_SkipsNestedVault: a folder with a .knot of its own is another
// vault; a walk of the outer vault never enters it.
func TestWalk_SkipsNestedVault(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"a.md", "sub/b.md", "inner/.knot/config.yaml", "inner/c.md", "inner/deep/d.md", "other/.knot"} {
		full := filepath.Join(root, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		if p == "other/.knot" {
			require.NoError(t, os.WriteFile(full, []byte("a file, not a vault"), 0o644))
			continue
		}
		require.NoError(t, os.WriteFile(full, nil, 0o644))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(root, ".knot"), 0o755))
	for _, o := range []WalkOptions{{}, {Concurrent: true}} {
		walk := func(r *Rules, root, dir string, fn fs.WalkDirFunc) error { return r.Walk(root, dir, o, fn) }
		var mu sync.Mutex
		var got []string
		err := walk(&Rules{}, root, "", func(rel string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				mu.Lock()
				got = append(got, rel)
				mu.Unlock()
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		want := []string{"a.md", "other/.knot", "sub/b.md"}
		if !slices.Equal(got, want) {
			t.Errorf("walk = %v; want %v (nothing of the inner vault)", got, want)
		}
		// Walking the inner vault's folder as a subtree skips it too.
		got = nil
		if err := walk(&Rules{}, root, "inner", func(rel string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				got = append(got, rel)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != 0 {
			t.Errorf("walk of inner = %v; want nothing", got)
		}
	}
}

// TestRules_OnePathRule: the rules take strand.ValidateRel's word for what
// a vault-relative path is. A name strand rejects (a volume name such as
// "c:" at the top, a backslash) is never a strand, so the rules ignore it
// too, and a walk, which the watcher's watches follow, does not enter or
// report it. Deeper, "c:" is an ordinary name.
func TestRules_OnePathRule(t *testing.T) {
	r := &Rules{}
	for _, p := range []string{"C:/x.md", "C:", "c:x.md", `a\b.md`, "notes/../x.md", "/x.md", ""} {
		if !r.Ignored(p, false) {
			t.Errorf("Ignored(%q) = false; want true: strand.ValidateRel rejects it", p)
		}
		if !r.Ignored(p, true) {
			t.Errorf("Ignored(%q, dir) = false; want true: strand.ValidateRel rejects it", p)
		}
	}
	for _, p := range []string{"notes/c:/x.md", "notes/c:x.md", "x.md"} {
		if r.Ignored(p, false) {
			t.Errorf("Ignored(%q) = true; want false", p)
		}
	}
	if runtime.GOOS == "windows" {
		return // such names cannot be made there
	}
	root := t.TempDir()
	for _, p := range []string{"c:/n.md", "c:x.md", `a\b.md`, "ok/n.md", "ok/d:/n.md"} {
		mustWrite(t, filepath.Join(root, filepath.FromSlash(p)), "x")
	}
	for _, o := range []WalkOptions{{}, {Concurrent: true}} {
		var mu sync.Mutex
		var got []string
		err := r.Walk(root, "", o, func(rel string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			mu.Lock()
			got = append(got, rel)
			mu.Unlock()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if want := []string{"", "ok", "ok/d:", "ok/d:/n.md", "ok/n.md"}; !slices.Equal(got, want) {
			t.Errorf("Walk(%+v) = %q; want %q", o, got, want)
		}
	}
}
