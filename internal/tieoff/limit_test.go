//go:build linux || darwin

package tieoff

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/knotd/knotd/internal/strand"
)

// runHelper is the re-executed test binary. "append-over-limit" appends a
// big section to $TIEOFF_DIR/n.tieoff.md with the file size limited to
// $TIEOFF_LIMIT bytes, so the kernel writes part of it and then fails
// with EFBIG; it prints Append's error.
func runHelper(name string) {
	if name != "append-over-limit" {
		fmt.Println("unknown helper", name)
		os.Exit(2)
	}
	limit, err := strconv.ParseUint(os.Getenv("TIEOFF_LIMIT"), 10, 64)
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	signal.Ignore(syscall.SIGXFSZ)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		fmt.Println("setrlimit:", err)
		os.Exit(2)
	}
	root, err := os.OpenRoot(os.Getenv("TIEOFF_DIR"))
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	_, err = Append(root, "n.tieoff.md", mkSection(1, strand.Modified, "n.md", strings.Repeat("big reply\n", 1000)))
	fmt.Println("append error:", err)
	os.Exit(0)
}

// TestAppend_PartialWriteIsUndone: when the write fails half way, Append
// truncates the file back and reports the error; no half section stays.
func TestAppend_PartialWriteIsUndone(t *testing.T) {
	root, dir := testVault(t)
	path := filepath.Join(dir, "n.tieoff.md")
	mustAppend(t, root, "n.tieoff.md", mkSection(0, strand.Created, "n.md", "first"))
	before := mustReadFile(t, path)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=append-over-limit", "TIEOFF_DIR="+dir,
		fmt.Sprintf("TIEOFF_LIMIT=%d", len(before)+500))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("append error: tieoff: append")) || !bytes.Contains(out, []byte("too large")) {
		t.Fatalf("helper output = %q; want Append's file-too-large error", out)
	}
	if after := mustReadFile(t, path); !bytes.Equal(after, before) {
		t.Errorf("file after the failed append is %d bytes (was %d); want it unchanged", len(after), len(before))
	}
	mustRead(t, root, "n.tieoff.md")
}
