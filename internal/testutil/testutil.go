// Package testutil holds the helpers knotd's tests share: waiting for a
// condition with a deadline, a buffer safe to write and read from
// different goroutines, and golden files with one -update flag.
//
// It is an ordinary package so that the tests of every package can import
// it; nothing outside tests should.
package testutil

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aymanbagabas/go-udiff"
)

// pollInterval is how often WaitFor checks its condition.
const pollInterval = 5 * time.Millisecond

// WaitFor polls cond until it holds, failing tb with what it waited for
// once timeout has passed. Like every FailNow, it must be called from the
// test's own goroutine.
func WaitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("gave up after %v waiting for %s", timeout, what)
		}
		time.Sleep(pollInterval) // a poll interval, not a wait for an effect
	}
}

// Buffer is a bytes.Buffer safe for writers and readers in different
// goroutines: a log sink a test reads while the code under test writes.
// The zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// update is the -update flag of every test binary that imports this
// package: go test ./pkg -update rewrites pkg's golden files. A package
// whose TestMain may register the flag itself must check flag.Lookup
// first (as agentrun's does); one that wants a flag of its own uses
// another name (as digest's -update-digest).
var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// Update reports whether the test binary was run with -update.
func Update() bool { return *update }

// Golden compares got with the golden file at path (relative to the
// package's directory, usually under testdata). With -update it writes got
// to path first, creating its directory. A difference is reported with
// tb.Errorf, as a unified diff (lines quoted when either side holds
// carriage returns or other invisible bytes); a missing file fails the
// test at once.
func Golden(tb testing.TB, path string, got []byte) {
	tb.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (go test -update creates it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	w, g := string(want), string(got)
	if invisible(w) || invisible(g) {
		w, g = quoteLines(w), quoteLines(g)
	}
	tb.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", path, udiff.Unified(path, "got", w, g))
}

// invisible reports whether s holds bytes a diff would not show: control
// characters other than newline and tab, invalid UTF-8, a byte order mark.
func invisible(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	return strings.ContainsFunc(s, func(r rune) bool {
		return r != '\n' && r != '\t' && (unicode.IsControl(r) || r == '\uFEFF')
	})
}

// quoteLines writes each line of s as a Go string literal, one a line.
func quoteLines(s string) string {
	var b strings.Builder
	for line := range strings.SplitAfterSeq(s, "\n") {
		b.WriteString(strconv.Quote(line))
		b.WriteByte('\n')
	}
	return b.String()
}
