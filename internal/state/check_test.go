package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// filled returns the path of a closed store holding n records with
// content, sessions, a journal entry and a notice.
func filled(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(func(tx *Tx) error {
		for i := range n {
			c := strings.Repeat(fmt.Sprintf("line %d of a note\n", i), 1+i%40)
			if err := tx.Put(rec(fmt.Sprintf("d%02d/n%04d.md", i%17, i), c), []byte(c)); err != nil {
				return err
			}
		}
		if err := tx.PutPending(pending("019a1b2c-0000-7000-8000-0000000000aa", 2, "d00/n0000.md", "x")); err != nil {
			return err
		}
		_, err := tx.Notice("conflict:a.sync-conflict-20261123-120000-ABCDEFG.md", time.Unix(1, 0))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(true); err != nil {
		t.Fatalf("Check of a sound store = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheck_FindsInconsistencies(t *testing.T) {
	tests := []struct {
		name    string
		content bool // a problem only the content check sees
		damage  func(btx *bolt.Tx) error
		want    string
	}{
		{"record does not decode", false, func(btx *bolt.Tx) error {
			return btx.Bucket(bucketStrands).Put([]byte("d00/n0000.md"), []byte{recordVersion, 1})
		}, "record d00/n0000.md"},
		{"record key not a strand path", false, func(btx *bolt.Tx) error {
			v := btx.Bucket(bucketStrands).Get([]byte("d00/n0000.md"))
			return btx.Bucket(bucketStrands).Put([]byte("../x.md"), append([]byte(nil), v...))
		}, "record key"},
		{"session index points elsewhere", false, func(btx *bolt.Tx) error {
			r := rec("d00/n0000.md", "")
			return btx.Bucket(bucketSessions).Put([]byte(r.Session), []byte("d01/n0001.md"))
		}, "the index gives session"},
		{"index entry without its record", false, func(btx *bolt.Tx) error {
			return btx.Bucket(bucketSessions).Put([]byte("stray-session"), []byte("gone.md"))
		}, "whose record does not hold it"},
		{"content without its record", true, func(btx *bolt.Tx) error {
			return btx.Bucket(bucketContent).Put([]byte("orphan.md"), []byte("x"))
		}, "kept without its record"},
		{"journal entry does not decode", false, func(btx *bolt.Tx) error {
			return btx.Bucket(bucketPending).Put([]byte("019a1b2c-0000-7000-8000-0000000000bb"), []byte{9})
		}, "pending run"},
		{"notice does not decode", false, func(btx *bolt.Tx) error {
			return btx.Bucket(bucketNotices).Put([]byte("k"), []byte{})
		}, "notice"},
		{"adoption time does not decode", false, func(btx *bolt.Tx) error {
			return btx.Bucket(bucketMeta).Put(keyAdopted, []byte{})
		}, "adoption time"},
		{"content does not match its hash", true, func(btx *bolt.Tx) error {
			return btx.Bucket(bucketContent).Put([]byte("d00/n0000.md"), []byte("changed"))
		}, "does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filled(t, 40)
			mustBolt(t, path, tt.damage)
			s, err := Open(path)
			if err != nil {
				t.Fatalf("Open = %v", err)
			}
			defer s.Close()
			if tt.content {
				if err := s.Check(false); err != nil {
					t.Errorf("Check(false) = %v; want nil (content is not looked at)", err)
				}
			}
			err = s.Check(true)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check = %v; want ErrCorrupt saying %q", err, tt.want)
			}
		})
	}
}

// TestStore_DamagedPagesAreErrorsNotPanics overwrites pages of a store
// with random bytes, as a disk or a sync tool might, and checks that
// opening and reading it gives errors wrapping ErrCorrupt, never a
// panic, whatever was hit.
func TestStore_DamagedPagesAreErrorsNotPanics(t *testing.T) {
	path := filled(t, 600)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	pages := len(orig) / page
	rng := rand.New(rand.NewPCG(1, 2))
	detected := 0
	for round := range 60 {
		b := append([]byte(nil), orig...)
		// Pages 0 and 1 are bbolt's meta pages: damage there is found by
		// their checksums at open; the others hold the data.
		first := 2
		if round%6 == 0 {
			first = 0
		}
		for range 1 + rng.IntN(3) {
			p := first + rng.IntN(pages-first)
			off := p*page + rng.IntN(page-64)
			for i := range 1 + rng.IntN(64) {
				b[off+i] = byte(rng.Uint32())
			}
		}
		damaged := filepath.Join(t.TempDir(), "state.db")
		if err := os.WriteFile(damaged, b, 0o600); err != nil {
			t.Fatal(err)
		}
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Fatalf("round %d: a damaged store panicked: %v", round, v)
				}
			}()
			s, err := Open(damaged)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Errorf("round %d: Open = %v; want ErrCorrupt", round, err)
				}
				detected++
				return
			}
			defer s.Close()
			err = s.Check(true)
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Errorf("round %d: Check = %v; want nil or ErrCorrupt", round, err)
			}
			if err != nil {
				detected++
			}
		}()
	}
	if detected == 0 {
		t.Error("no round's damage was detected; the test damages nothing")
	}
	t.Logf("%d of 60 damaged stores detected (the rest were hit where bbolt keeps free or unused bytes)", detected)
}

func TestOpen_UpgradesSchema1(t *testing.T) {
	path := filled(t, 3)
	mustBolt(t, path, func(btx *bolt.Tx) error {
		if err := btx.DeleteBucket(bucketNotices); err != nil {
			return err
		}
		return btx.Bucket(bucketMeta).Put(keySchema, binary.AppendUvarint(nil, 1))
	})
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open(schema 1) = %v", err)
	}
	defer s.Close()
	if got := mustGet(t, s, "d00/n0000.md"); got.Path != "d00/n0000.md" {
		t.Errorf("a schema 1 record was lost: %+v", got)
	}
	var isNew bool
	if err := s.Update(func(tx *Tx) (err error) { isNew, err = tx.Notice("k", time.Unix(5, 0)); return err }); err != nil || !isNew {
		t.Errorf("Notice on an upgraded store = %v, %v; want a new notice", isNew, err)
	}
	if err := s.Check(true); err != nil {
		t.Errorf("Check after the upgrade = %v", err)
	}
}

func TestStore_Notice(t *testing.T) {
	s := mustOpenStore(t, statePath(t))
	t0, t1 := time.Unix(100, 0).UTC(), time.Unix(200, 0).UTC()
	steps := []struct {
		do   func(tx *Tx) (bool, error)
		want bool
	}{
		{func(tx *Tx) (bool, error) { return tx.Notice("a", t0) }, true},
		{func(tx *Tx) (bool, error) { return tx.Notice("a", t1) }, false},
		{func(tx *Tx) (bool, error) { return tx.Notice("b", t1) }, true},
	}
	for i, st := range steps {
		var got bool
		if err := s.Update(func(tx *Tx) (err error) { got, err = st.do(tx); return err }); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got != st.want {
			t.Errorf("step %d = %v; want %v", i, got, st.want)
		}
	}
	if err := s.View(func(tx *Tx) error {
		at, ok, err := tx.Noticed("b")
		if err != nil || !ok || !at.Equal(t1) {
			t.Errorf("Noticed(b) = %v, %v, %v; want %v", at, ok, err, t1)
		}
		_, err = tx.Notice("", t0)
		if err == nil {
			t.Error("Notice with an empty key succeeded")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestStore_DamageFoundInUseIsSignalled: damage a read meets while the
// store is in use closes Damaged, once, and Damage says what it was.
func TestStore_DamageFoundInUseIsSignalled(t *testing.T) {
	path := filled(t, 40)
	mustBolt(t, path, func(btx *bolt.Tx) error {
		return btx.Bucket(bucketStrands).Put([]byte("d00/n0000.md"), []byte{recordVersion, 1})
	})
	s := mustOpenStore(t, path)
	if s.Damage() != nil {
		t.Fatalf("Damage before any use = %v", s.Damage())
	}
	if _, _, err := s.Get("d01/n0001.md"); err != nil {
		t.Fatalf("Get of a sound record = %v", err)
	}
	select {
	case <-s.Damaged():
		t.Fatal("Damaged closed before any damage was met")
	default:
	}
	if _, _, err := s.Get("d00/n0000.md"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get of the damaged record = %v; want ErrCorrupt", err)
	}
	select {
	case <-s.Damaged():
	default:
		t.Fatal("Damaged did not close")
	}
	if err := s.Damage(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "d00/n0000.md") {
		t.Errorf("Damage = %v; want the first damage met", err)
	}
}

func TestStdlibFrame(t *testing.T) {
	for fn, want := range map[string]bool{
		"runtime.gopanic":                         true,
		"internal/bytealg.Compare":                true,
		"bytes.Compare":                           true,
		"sort.Search":                             true,
		"go.etcd.io/bbolt.(*Cursor).search":       false,
		"github.com/knotd/knotd/state.(*Tx).Get":  false,
		"github.com/knotd/knotd/vault.(*Vault).x": false,
	} {
		if got := stdlibFrame(fn); got != want {
			t.Errorf("stdlibFrame(%q) = %v; want %v", fn, got, want)
		}
	}
}

// TestStoreFuncPrefix: panickedInStore recognises this package's frames
// by their import path, whatever it is (it was spelled out, and would
// have stopped matching once the package moved under internal/).
func TestStoreFuncPrefix(t *testing.T) {
	name := runtime.FuncForPC(reflect.ValueOf(decodePending).Pointer()).Name()
	if !strings.HasPrefix(name, storeFuncPrefix) {
		t.Errorf("decodePending's frame is %q; storeFuncPrefix %q does not begin it", name, storeFuncPrefix)
	}
}
