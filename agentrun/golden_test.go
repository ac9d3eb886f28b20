package agentrun

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// goldenUpdate reports whether the tests run with -update, which rewrites
// the golden files under testdata/. The flag is registered in TestMain
// unless another test file of the package already did.
func goldenUpdate() bool {
	f := flag.Lookup("update")
	if f == nil {
		return false
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	b, _ := g.Get().(bool)
	return b
}

// checkPromptGolden compares got with testdata/<name>.golden, or rewrites
// the file when the tests run with -update.
func checkPromptGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if goldenUpdate() {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s; got:\n%s", name, path, got)
	}
}
