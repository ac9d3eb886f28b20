package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a testing.TB that notes failures instead of failing, so that
// the helpers' own failures can be tested. FailNow ends the goroutine, as
// testing's does.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errs   []string
	failed bool
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.FailNow()
}

func (r *recorder) Fatal(args ...any) {
	r.Errorf("%v", args...)
	r.FailNow()
}

func (r *recorder) FailNow() {
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
	runtime.Goexit()
}

// run calls f with a recorder in a goroutine of its own (FailNow ends it)
// and returns the recorder once f is over.
func run(tb testing.TB, f func(tb testing.TB)) *recorder {
	r := &recorder{TB: tb}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

func TestWaitFor(t *testing.T) {
	start := time.Now()
	n := 0
	WaitFor(t, time.Minute, "the third call", func() bool { n++; return n == 3 })
	assert.Equal(t, 3, n)
	assert.Less(t, time.Since(start), time.Minute)

	r := run(t, func(tb testing.TB) {
		WaitFor(tb, 20*time.Millisecond, "never", func() bool { return false })
	})
	require.True(t, r.failed, "WaitFor did not fail when cond never held")
	require.Len(t, r.errs, 1)
	assert.Contains(t, r.errs[0], "waiting for never")
}

func TestBuffer(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, strings.Repeat("x", 400), b.String())
}

func TestGolden(t *testing.T) {
	if Update() {
		t.Skip("-update would rewrite the files this test compares")
	}
	path := filepath.Join(t.TempDir(), "a.golden")
	require.NoError(t, os.WriteFile(path, []byte("one\ntwo\n"), 0o644))

	r := run(t, func(tb testing.TB) { Golden(tb, path, []byte("one\ntwo\n")) })
	assert.False(t, r.failed)
	assert.Empty(t, r.errs)

	r = run(t, func(tb testing.TB) { Golden(tb, path, []byte("one\nthree\n")) })
	require.Len(t, r.errs, 1)
	assert.Contains(t, r.errs[0], "-two\n+three\n")

	r = run(t, func(tb testing.TB) { Golden(tb, path, []byte("one\r\ntwo\n")) })
	require.Len(t, r.errs, 1)
	assert.Contains(t, r.errs[0], `+"one\r\n"`, "a carriage return is shown quoted")

	r = run(t, func(tb testing.TB) { Golden(tb, filepath.Join(t.TempDir(), "missing"), nil) })
	assert.True(t, r.failed, "a missing golden file fails at once")
}

func TestGolden_Update(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "b.golden")
	saved := *update
	*update = true
	t.Cleanup(func() { *update = saved })
	r := run(t, func(tb testing.TB) { Golden(tb, path, []byte("new\n")) })
	assert.Empty(t, r.errs)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "new\n", string(got))
}
