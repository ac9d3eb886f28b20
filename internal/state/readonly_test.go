package state

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestOpenReadOnly: a read-only store reads what a writer committed,
// shares the file with other readers, changes nothing (the file's bytes
// stay), creates nothing where there is no store, and leaves an empty
// file to a writer (ErrNotReady). A writer waits for it, and gets the
// file once it is closed.
func TestOpenReadOnly(t *testing.T) {
	path := statePath(t)
	w, err := openStore(path, storeOptions{timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Put(rec("a.md", "# A\n"), []byte("# A\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := OpenReadOnly(path)
	if err != nil {
		t.Fatalf("OpenReadOnly: %v", err)
	}
	r2, err := OpenReadOnly(path)
	if err != nil {
		t.Fatalf("a second reader: %v", err)
	}
	var got []string
	if err := r2.ForEach(func(r Record) error { got = append(got, r.Path); return nil }); err != nil || len(got) != 1 || got[0] != "a.md" {
		t.Errorf("ForEach read %v, %v; want a.md", got, err)
	}
	if ps, err := r1.Paused(); err != nil || len(ps) != 0 {
		t.Errorf("Paused = %v, %v; want none", ps, err)
	}
	if s, err := openStore(path, storeOptions{timeout: 20 * time.Millisecond}); !errors.Is(err, ErrBusy) {
		if s != nil {
			_ = s.Close()
		}
		t.Errorf("a writer while readers hold the store: %v; want ErrBusy", err)
	}
	for _, r := range []*Store{r1, r2} {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(before, after) {
		t.Errorf("reading changed the store's file (%v)", err)
	}
	w, err = openStore(path, storeOptions{timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("a writer after the readers: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	none := filepath.Join(t.TempDir(), "state", "state.db")
	if _, err := OpenReadOnly(none); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenReadOnly of no store: %v; want ErrNotExist", err)
	}
	if _, err := os.Lstat(filepath.Dir(none)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenReadOnly of no store made its folder (%v)", err)
	}
	empty := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := OpenReadOnly(empty); !errors.Is(err, ErrNotReady) {
		if s != nil {
			_ = s.Close()
		}
		t.Errorf("OpenReadOnly of an empty file: %v; want ErrNotReady", err)
	}
}
