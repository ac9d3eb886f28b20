package durable

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestSyncDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(dir); err != nil {
		t.Errorf("SyncDir(%q) = %v; want nil", dir, err)
	}
	if err := SyncDir(filepath.Join(dir, "missing")); err == nil {
		t.Error("SyncDir(missing) = nil; want an error")
	}
}

func TestSyncDirIn(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SyncDirIn does nothing on Windows")
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, tc := range []struct {
		dir     string
		wantErr bool
	}{
		{".", false},
		{"sub", false},
		{"missing", true},
		{"..", true}, // outside the root
	} {
		if err := SyncDirIn(root, tc.dir); (err != nil) != tc.wantErr {
			t.Errorf("SyncDirIn(%q) = %v; want an error: %v", tc.dir, err, tc.wantErr)
		}
	}
}
