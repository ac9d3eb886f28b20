package state_test

import (
	"path/filepath"
	"testing"

	"github.com/knotd/knotd/internal/state"
)

// TestStore_ACallersPanicIsNoDamage: a panic in the caller's own code run
// in a transaction is a bug, not a damaged store: it is not turned into
// ErrCorrupt (and the store not given up), it goes on as a panic. (An
// external test package, so that the caller's code is not this package's.)
func TestStore_ACallersPanicIsNoDamage(t *testing.T) {
	s, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, op := range []func(fn func(*state.Tx) error) error{s.View, s.Update} {
		func() {
			defer func() {
				if v := recover(); v == nil {
					t.Error("the caller's panic was swallowed")
				}
			}()
			_ = op(func(*state.Tx) error {
				panic("a bug in the caller's code")
			})
		}()
	}
	if err := s.Damage(); err != nil {
		t.Errorf("a caller's bug was taken for damage: %v", err)
	}
	if _, _, err := s.Get("a.md"); err != nil {
		t.Errorf("the store after the caller's panic: %v", err)
	}
}
