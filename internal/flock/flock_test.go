package flock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestTryLock_SecondOpenConflictsUntilUnlocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	open := func() *os.File {
		t.Helper()
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	a, b := open(), open()
	if err := TryLock(a); err != nil {
		t.Fatalf("TryLock(a) = %v; want nil", err)
	}
	if err := TryLock(b); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock(b) while a holds the lock = %v; want ErrLocked", err)
	}
	if err := Unlock(a); err != nil {
		t.Fatalf("Unlock(a) = %v", err)
	}
	if err := TryLock(b); err != nil {
		t.Fatalf("TryLock(b) after Unlock(a) = %v; want nil", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := TryLock(a); err == nil || errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock on a closed file = %v; want an I/O error", err)
	}
	if Unsupported(ErrLocked) {
		t.Error("Unsupported(ErrLocked) = true")
	}
}
