package state

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/strand"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

func mustOpenStore(t testing.TB, path string) *Store {
	t.Helper()
	s, err := openStore(path, storeOptions{timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func statePath(t testing.TB) string {
	return filepath.Join(t.TempDir(), "state", "state.db")
}

// rec returns a record for content at path with every field set.
func rec(path string, content string) Record {
	return Record{
		Path:        path,
		Stamp:       Stamp{Size: int64(len(content)), ModTime: 1_790_000_000_123_456_789, Inode: 42, Device: 7},
		Hash:        HashOf([]byte(content)),
		Session:     "0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21-" + path,
		Resume:      "resume-" + path,
		Turns:       3,
		LastRunID:   "019a1b2c-0000-7000-8000-000000000001",
		LastOutcome: OutcomeSucceeded,
		Processed:   time.Date(2026, 11, 21, 19, 30, 5, 123, time.UTC),
	}
}

func mustPut(t testing.TB, s *Store, r Record, content string) {
	t.Helper()
	if err := s.Put(r, []byte(content)); err != nil {
		t.Fatalf("Put(%s): %v", r.Path, err)
	}
}

func mustGet(t testing.TB, s *Store, path string) Record {
	t.Helper()
	r, ok, err := s.Get(path)
	if err != nil || !ok {
		t.Fatalf("Get(%s) = _, %v, %v; want a record", path, ok, err)
	}
	return r
}

func TestStore_RoundTrip(t *testing.T) {
	s := mustOpenStore(t, statePath(t))
	tests := []struct {
		name    string
		rec     Record
		content string
	}{
		{"zero fields", Record{Path: "a.md", Hash: HashOf(nil)}, ""},
		{"every field", rec("ideas/plan.md", "# Plan\n\nship it\n"), "# Plan\n\nship it\n"},
		{"unicode path", rec("notes/été/日記.md", "bonjour"), "bonjour"},
		{"negative mtime", Record{Path: "old.md", Stamp: Stamp{ModTime: -5}, Hash: HashOf([]byte("x")), LastOutcome: OutcomeAdopted}, "x"},
		{"large content", rec("big.md", strings.Repeat("line\n", 200_000)), strings.Repeat("line\n", 200_000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustPut(t, s, tt.rec, tt.content)
			if got := mustGet(t, s, tt.rec.Path); !reflect.DeepEqual(got, tt.rec) {
				t.Errorf("Get(%s) = %+v; want %+v", tt.rec.Path, got, tt.rec)
			}
			content, ok, err := s.Content(tt.rec.Path)
			if err != nil || !ok || string(content) != tt.content {
				t.Errorf("Content(%s) = %d bytes, %v, %v; want %d bytes", tt.rec.Path, len(content), ok, err, len(tt.content))
			}
		})
	}
	if _, ok, err := s.Get("missing.md"); ok || err != nil {
		t.Errorf("Get(missing.md) = _, %v, %v; want false, nil", ok, err)
	}
	if _, ok, err := s.Content("missing.md"); ok || err != nil {
		t.Errorf("Content(missing.md) = _, %v, %v; want false, nil", ok, err)
	}
}

func TestStore_ReopenPersists(t *testing.T) {
	path := statePath(t)
	s, err := Open(path)
	require.NoError(t, err)
	want := rec("a/b.md", "hello")
	mustPut(t, s, want, "hello")
	adopted := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	require.NoError(t, s.Update(func(tx *Tx) error { return tx.SetAdopted(adopted) }))
	require.NoError(t, s.Close())

	s = mustOpenStore(t, path)
	if got := mustGet(t, s, "a/b.md"); !reflect.DeepEqual(got, want) {
		t.Errorf("after reopen Get = %+v; want %+v", got, want)
	}
	if got, ok, err := s.Adopted(); err != nil || !ok || !got.Equal(adopted) {
		t.Errorf("after reopen Adopted() = %v, %v, %v; want %v, true, nil", got, ok, err, adopted)
	}
	if got, ok, err := s.BySession(want.Session); err != nil || !ok || got.Path != "a/b.md" {
		t.Errorf("after reopen BySession = %s, %v, %v; want a/b.md", got.Path, ok, err)
	}
}

func TestStore_NewStoreIsNotAdopted(t *testing.T) {
	s := mustOpenStore(t, statePath(t))
	if _, ok, err := s.Adopted(); ok || err != nil {
		t.Errorf("Adopted() = _, %v, %v; want false, nil", ok, err)
	}
}

func TestStore_FileModes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permissions on windows")
	}
	path := statePath(t)
	mustOpenStore(t, path)
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("mode of %s = %v; want %v", p, got, want)
		}
	}
}

func TestStore_PutRejects(t *testing.T) {
	s := mustOpenStore(t, statePath(t))
	tests := []struct {
		name    string
		rec     Record
		content string
	}{
		{"hash mismatch", Record{Path: "a.md", Hash: HashOf([]byte("other"))}, "this"},
		{"escaping path", Record{Path: "../a.md", Hash: HashOf(nil)}, ""},
		{"absolute path", Record{Path: "/etc/a.md", Hash: HashOf(nil)}, ""},
		{"tie-off", Record{Path: "a.tieoff.md", Hash: HashOf(nil)}, ""},
		{"state dir", Record{Path: ".knot/a.md", Hash: HashOf(nil)}, ""},
		{"negative turns", Record{Path: "a.md", Hash: HashOf(nil), Turns: -1}, ""},
		{"bad outcome", Record{Path: "a.md", Hash: HashOf(nil), LastOutcome: 99}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Put(tt.rec, []byte(tt.content)); err == nil {
				t.Errorf("Put(%+v) = nil; want an error", tt.rec)
			}
			if _, ok, _ := s.Get(tt.rec.Path); ok {
				t.Errorf("Get(%s) found a record after a refused Put", tt.rec.Path)
			}
		})
	}
}

func TestStore_PutReplacesSession(t *testing.T) {
	s := mustOpenStore(t, statePath(t))
	r := rec("a.md", "x")
	mustPut(t, s, r, "x")
	old := r.Session
	r.Session = "new-session"
	mustPut(t, s, r, "x")
	if _, ok, err := s.BySession(old); ok || err != nil {
		t.Errorf("BySession(old) = _, %v, %v; want false, nil", ok, err)
	}
	if got, ok, err := s.BySession("new-session"); !ok || err != nil || got.Path != "a.md" {
		t.Errorf("BySession(new) = %s, %v, %v; want a.md", got.Path, ok, err)
	}
}

func TestStore_SessionTaken(t *testing.T) {
	s := mustOpenStore(t, statePath(t))
	a := rec("a.md", "x")
	mustPut(t, s, a, "x")
	copied := rec("copy.md", "x")
	copied.Session = a.Session
	if err := s.Put(copied, []byte("x")); !errors.Is(err, ErrSessionTaken) {
		t.Fatalf("Put(copy with a's session) = %v; want ErrSessionTaken", err)
	}
	// Once a.md is gone, its session is free for the strand that has it.
	require.NoError(t, s.Delete("a.md"))
	mustPut(t, s, copied, "x")
	if got, ok, _ := s.BySession(a.Session); !ok || got.Path != "copy.md" {
		t.Errorf("BySession = %s, %v; want copy.md", got.Path, ok)
	}
}

func TestStore_Delete(t *testing.T) {
	s := mustOpenStore(t, statePath(t))
	r := rec("a.md", "x")
	mustPut(t, s, r, "x")
	for range 2 { // deleting twice is not an error
		if err := s.Delete("a.md"); err != nil {
			t.Fatalf("Delete(a.md) = %v", err)
		}
	}
	if _, ok, _ := s.Get("a.md"); ok {
		t.Error("Get(a.md) found a deleted record")
	}
	if _, ok, _ := s.Content("a.md"); ok {
		t.Error("Content(a.md) found a deleted record's content")
	}
	if _, ok, _ := s.BySession(r.Session); ok {
		t.Error("BySession found a deleted record")
	}
}

func TestStore_RenameKeepsHistory(t *testing.T) {
	s := mustOpenStore(t, statePath(t))
	r := rec("old/name.md", "the content")
	mustPut(t, s, r, "the content")
	if err := s.Rename("old/name.md", "new/place.md"); err != nil {
		t.Fatalf("Rename = %v", err)
	}
	if _, ok, _ := s.Get("old/name.md"); ok {
		t.Error("old path still has a record")
	}
	want := r
	want.Path = "new/place.md"
	if got := mustGet(t, s, "new/place.md"); !reflect.DeepEqual(got, want) {
		t.Errorf("Get(new) = %+v; want %+v", got, want)
	}
	if c, _, _ := s.Content("new/place.md"); string(c) != "the content" {
		t.Errorf("Content(new) = %q; want %q", c, "the content")
	}
	if got, ok, _ := s.BySession(r.Session); !ok || got.Path != "new/place.md" {
		t.Errorf("BySession = %s, %v; want new/place.md", got.Path, ok)
	}
}

func TestStore_RenameErrors(t *testing.T) {
	s := mustOpenStore(t, statePath(t))
	mustPut(t, s, rec("a.md", "a"), "a")
	mustPut(t, s, rec("b.md", "b"), "b")
	tests := []struct {
		old, new string
		want     error
	}{
		{"missing.md", "c.md", ErrNotFound},
		{"a.md", "b.md", ErrExists},
		{"a.md", "../c.md", strand.ErrBadPath},
	}
	for _, tt := range tests {
		if err := s.Rename(tt.old, tt.new); !errors.Is(err, tt.want) {
			t.Errorf("Rename(%s, %s) = %v; want %v", tt.old, tt.new, err, tt.want)
		}
	}
	if c, _, _ := s.Content("b.md"); string(c) != "b" {
		t.Errorf("Content(b.md) = %q after a refused rename; want %q", c, "b")
	}
}

func TestStore_Restamp(t *testing.T) {
	s := mustOpenStore(t, statePath(t))
	r := rec("a.md", "x")
	mustPut(t, s, r, "x")
	st := Stamp{Size: 1, ModTime: 99, Inode: 3, Device: 4}
	require.NoError(t, s.Update(func(tx *Tx) error { return tx.Restamp("a.md", st) }))
	want := r
	want.Stamp = st
	if got := mustGet(t, s, "a.md"); !reflect.DeepEqual(got, want) {
		t.Errorf("after Restamp Get = %+v; want %+v", got, want)
	}
	err := s.Update(func(tx *Tx) error { return tx.Restamp("missing.md", st) })
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("Restamp(missing.md) = %v; want ErrNotFound", err)
	}
}

func TestStore_UpdateIsAtomic(t *testing.T) {
	s := mustOpenStore(t, statePath(t))
	boom := errors.New("boom")
	err := s.Update(func(tx *Tx) error {
		for i := range 10 {
			if err := tx.Put(rec(fmt.Sprintf("n%d.md", i), "x"), []byte("x")); err != nil {
				return err
			}
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v; want boom", err)
	}
	n := 0
	require.NoError(t, s.ForEach(func(Record) error { n++; return nil }))
	if n != 0 {
		t.Errorf("%d records after a failed Update; want 0", n)
	}
}

func TestStore_ViewRefusesWrites(t *testing.T) {
	s := mustOpenStore(t, statePath(t))
	err := s.View(func(tx *Tx) error { return tx.Put(rec("a.md", "x"), []byte("x")) })
	if err == nil {
		t.Error("Put in View = nil; want an error")
	}
}

func TestStore_ForEach(t *testing.T) {
	s := mustOpenStore(t, statePath(t))
	const n = 2*forEachChunk + 17
	if err := s.Update(func(tx *Tx) error {
		for i := range n {
			p := fmt.Sprintf("d/%05d.md", i)
			if err := tx.Put(Record{Path: p, Hash: HashOf([]byte(p))}, []byte(p)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var orig []string
	err := s.ForEach(func(r Record) error {
		orig = append(orig, r.Path)
		if len(orig)%500 != 0 {
			return nil
		}
		// fn runs outside any transaction: writing must not deadlock.
		// (a/… sorts before d/…, behind the iteration.)
		return s.Put(Record{Path: "a/" + r.Path, Hash: HashOf(nil)}, nil)
	})
	if err != nil {
		t.Fatalf("ForEach = %v", err)
	}
	if len(orig) != n {
		t.Fatalf("ForEach saw %d original records; want %d", len(orig), n)
	}
	for i, p := range orig {
		if want := fmt.Sprintf("d/%05d.md", i); p != want {
			t.Fatalf("ForEach record %d = %s; want %s", i, p, want)
		}
	}

	stop := errors.New("stop")
	calls := 0
	if err := s.ForEach(func(Record) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("ForEach(fn failing) = %v after %d calls; want stop after 1", err, calls)
	}
}

// TestStore_RecordsBelow: records(dir) yields the records below dir, in
// path order, across chunks, and nothing of a sibling that shares dir's
// name as a prefix.
func TestStore_RecordsBelow(t *testing.T) {
	s := mustOpenStore(t, statePath(t))
	var all []string
	for i := range forEachChunk + 3 {
		all = append(all, fmt.Sprintf("notes/%05d.md", i))
	}
	all = append(all, "a.md", "notes.md", "notes-old/x.md", "notes/deep/y.md", "notes0/z.md", "z/notes/w.md")
	slices.Sort(all)
	if err := s.Update(func(tx *Tx) error {
		for _, p := range all {
			if err := tx.Put(Record{Path: p, Hash: HashOf([]byte(p))}, []byte(p)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	below := func(dir string) []string {
		var want []string
		for _, p := range all {
			if strings.HasPrefix(p, dir+"/") {
				want = append(want, p)
			}
		}
		return want
	}
	tests := []struct {
		dir  string
		want []string
	}{
		{"", all},
		{"notes", below("notes")},
		{"notes/deep", []string{"notes/deep/y.md"}},
		{"note", nil},
		{"z", []string{"z/notes/w.md"}},
		{"zz", nil},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			var got []string
			it := s.Records(tt.dir)
			for {
				r, err := it.Peek()
				require.NoError(t, err)
				if r == nil {
					break
				}
				got = append(got, r.Path)
				it.Next()
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("records(%q) = %d records, from %q; want %d", tt.dir, len(got), got[:min(3, len(got))], len(tt.want))
			}
		})
	}
}

func TestStore_AdoptsManyInBatches(t *testing.T) {
	// 20,000 records span many pages and ForEach chunks; the 100,000
	// strand case is measured by BenchmarkStore_Adopt (it takes most of a
	// minute under the race detector).
	s := mustOpenStore(t, statePath(t))
	const n = 20_000
	require.NoError(t, adopt(s, n, 5_000))
	count := 0
	require.NoError(t, s.ForEach(func(Record) error { count++; return nil }))
	if count != n {
		t.Errorf("ForEach counted %d records; want %d", count, n)
	}
	if _, ok, _ := s.Adopted(); !ok {
		t.Error("Adopted() = false after adoption")
	}
}

// adopt writes n records with 240-byte contents in transactions of batch
// records, as first contact with a vault does, and marks the store adopted
// in the last one.
func adopt(s *Store, n, batch int) error {
	content := bytes.Repeat([]byte("a note line\n"), 20)
	for start := 0; start < n; start += batch {
		err := s.Update(func(tx *Tx) error {
			for i := start; i < min(start+batch, n); i++ {
				r := Record{Path: fmt.Sprintf("notes/%03d/%06d.md", i%1000, i), Hash: HashOf(content),
					Session: fmt.Sprintf("session-%06d", i), LastOutcome: OutcomeAdopted}
				if err := tx.Put(r, content); err != nil {
					return err
				}
			}
			if start+batch >= n {
				return tx.SetAdopted(time.Now())
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("adopt from %d: %w", start, err)
		}
	}
	return nil
}

func TestOpenStore_Busy(t *testing.T) {
	path := statePath(t)
	mustOpenStore(t, path)
	s, err := openStore(path, storeOptions{timeout: 20 * time.Millisecond})
	if !errors.Is(err, ErrBusy) {
		if s != nil {
			_ = s.Close()
		}
		t.Fatalf("second OpenStore = %v; want ErrBusy", err)
	}
}

func TestOpenStore_Damaged(t *testing.T) {
	tests := []struct {
		name  string
		write func(t *testing.T, path string)
		want  error
	}{
		{"garbage", func(t *testing.T, path string) {
			mustWrite(t, path, bytes.Repeat([]byte("not a database "), 2000))
		}, ErrCorrupt},
		{"too short", func(t *testing.T, path string) {
			mustWrite(t, path, []byte("x"))
		}, ErrCorrupt},
		{"truncated", func(t *testing.T, path string) {
			mustWrite(t, path, validDB(t)[:4096])
		}, ErrCorrupt},
		{"foreign bbolt file", func(t *testing.T, path string) {
			mustBolt(t, path, func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("other")); return err })
		}, ErrCorrupt},
		{"newer schema", func(t *testing.T, path string) {
			mustBolt(t, path, func(tx *bolt.Tx) error {
				b, err := tx.CreateBucket(bucketMeta)
				if err != nil {
					return err
				}
				return b.Put(keySchema, []byte{schemaVersion + 1})
			})
		}, ErrVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			tt.write(t, path)
			s, err := Open(path)
			if !errors.Is(err, tt.want) {
				if s != nil {
					_ = s.Close()
				}
				t.Fatalf("Open(%s) = %v; want %v", tt.name, err, tt.want)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestStore_ContentCheckedAgainstHash(t *testing.T) {
	s := mustOpenStore(t, statePath(t))
	mustPut(t, s, rec("a.md", "x"), "x")
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketContent).Put([]byte("a.md"), []byte("tampered"))
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Content("a.md"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Content(tampered) = %v; want ErrCorrupt", err)
	}
}

func mustWrite(t *testing.T, path string, b []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, b, 0o600))
}

func mustBolt(t *testing.T, path string, fn func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(fn))
	require.NoError(t, db.Close())
}

// validDB returns the bytes of a store holding a few records.
func validDB(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path)
	require.NoError(t, err)
	for i := range 50 {
		c := strings.Repeat("content ", 100*i)
		require.NoError(t, s.Put(rec(fmt.Sprintf("n%d.md", i), c), []byte(c)))
	}
	require.NoError(t, s.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// TestStore_UpdateViewErrors: what fn returns comes back as it is; a
// failure of the store itself says which transaction and which file.
func TestStore_UpdateViewErrors(t *testing.T) {
	path := statePath(t)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	txns := []struct {
		name string
		txn  func(func(*Tx) error) error
		op   string
	}{
		{"Update", s.Update, "commit"},
		{"View", s.View, "read"},
	}
	mine := errors.New("mine")
	for _, tc := range txns {
		if err := tc.txn(func(*Tx) error { return mine }); err != mine {
			t.Errorf("%s(fn returning %v) = %v; want fn's error as it is", tc.name, mine, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range txns {
		err := tc.txn(func(*Tx) error { return nil })
		if want := "state: " + tc.op + " state " + path + ": "; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s on a closed store = %v; want an error starting %q", tc.name, err, want)
		}
	}
}
