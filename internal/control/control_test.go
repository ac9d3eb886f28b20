package control

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeBackend records the commands it got and answers from its fields.
type fakeBackend struct {
	mu   sync.Mutex
	got  []string
	fail error
}

func (f *fakeBackend) note(s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, s)
	return f.fail
}

func (f *fakeBackend) Status(context.Context) (Status, error) {
	return Status{Vault: "/v", PID: 7, Running: []Running{{Note: "a.md", RunID: "r1"}}}, f.note("status")
}

func (f *fakeBackend) Run(_ context.Context, notes []string) (Result, error) {
	return Result{Done: notes}, f.note("run " + strings.Join(notes, ","))
}

func (f *fakeBackend) Retry(_ context.Context, since time.Time) (Result, error) {
	return Result{Refused: []Refusal{{Note: "b.md", Why: "gone"}}}, f.note("retry " + since.Format(time.RFC3339))
}

func (f *fakeBackend) Pause(_ context.Context, notes []string, why string) (Result, error) {
	return Result{Done: notes}, f.note("pause " + strings.Join(notes, ",") + " " + why)
}

func (f *fakeBackend) Resume(_ context.Context, notes []string) (Result, error) {
	return Result{Done: notes}, f.note("resume " + strings.Join(notes, ","))
}

// folder returns a new folder as knotd makes the vault's folder in the
// state directory: 0700.
func folder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o700))
	return dir
}

// serve serves b on a new socket until the test ends.
func serve(t *testing.T, b Backend) *Client {
	t.Helper()
	path := SocketPath(folder(t))
	ln, err := Listen(path)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, b, nil) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return &Client{Path: path}
}

func TestClient_EveryCommandReachesTheBackend(t *testing.T) {
	b := &fakeBackend{}
	c := serve(t, b)
	ctx := t.Context()
	since := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)

	st, err := c.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, Status{Vault: "/v", PID: 7, Running: []Running{{Note: "a.md", RunID: "r1"}}}, st)
	tests := []struct {
		call func() (Result, error)
		want Result
	}{
		{func() (Result, error) { return c.Run(ctx, []string{"a.md", "b c.md"}) }, Result{Done: []string{"a.md", "b c.md"}}},
		{func() (Result, error) { return c.Retry(ctx, since) }, Result{Refused: []Refusal{{Note: "b.md", Why: "gone"}}}},
		{func() (Result, error) { return c.Pause(ctx, []string{"a.md"}, "busy") }, Result{Done: []string{"a.md"}}},
		{func() (Result, error) { return c.Resume(ctx, nil) }, Result{}},
	}
	for _, tt := range tests {
		got, err := tt.call()
		require.NoError(t, err)
		require.Equal(t, tt.want, got)
	}
	require.Equal(t, []string{"status", "run a.md,b c.md", "retry 2026-11-23T00:00:00Z", "pause a.md busy", "resume "}, b.got)

	b.fail = errors.New("the vault is gone")
	_, err = c.Run(ctx, []string{"a.md"})
	require.EqualError(t, err, "the vault is gone")
}

func TestClient_NoDaemon(t *testing.T) {
	c := &Client{Path: filepath.Join(folder(t), socketName)}
	_, err := c.Status(t.Context())
	require.ErrorIs(t, err, ErrNoDaemon)
}

func TestListen(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("socket modes are Unix's")
	}
	path := SocketPath(folder(t))
	ln, err := Listen(path)
	require.NoError(t, err)
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	_, err = Listen(path)
	require.ErrorContains(t, err, "already answers", "a second daemon took the socket of a running one")
	require.NoError(t, ln.Close())

	// A socket left behind by a knotd that was killed is replaced.
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	l.SetUnlinkOnClose(false)
	require.NoError(t, l.Close())
	ln, err = Listen(path)
	require.NoError(t, err, "a stale socket was not replaced")
	require.NoError(t, ln.Close())

	// Anything else in the way is not removed.
	require.NoError(t, os.WriteFile(path, []byte("mine"), 0o600))
	_, err = Listen(path)
	require.ErrorContains(t, err, "in the way")
}

func TestSocketPath_LongFolder(t *testing.T) {
	dir := filepath.Join(folder(t), strings.Repeat("d", 120))
	p := SocketPath(dir)
	require.LessOrEqual(t, len(p), maxSocketPath)
	require.Equal(t, p, SocketPath(dir), "the same folder gets the same socket")
	require.NotEqual(t, p, SocketPath(dir+"x"))
	if runtime.GOOS == "windows" {
		return
	}
	ln, err := Listen(p)
	require.NoError(t, err)
	require.NoError(t, ln.Close())

	// A short folder someone else could open is refused.
	require.NoError(t, os.Chmod(filepath.Dir(p), 0o755))
	t.Cleanup(func() { _ = os.Chmod(filepath.Dir(p), 0o700) })
	_, err = Listen(p)
	require.ErrorContains(t, err, "0700")
}

// TestServe_StopsWithAClientThatSaysNothing: Serve returns when its
// context ends, also while a client holds a connection open.
func TestServe_StopsWithAClientThatSaysNothing(t *testing.T) {
	path := SocketPath(folder(t))
	ln, err := Listen(path)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, &fakeBackend{}, nil) }()
	conn, err := net.Dial("unix", path)
	require.NoError(t, err)
	defer conn.Close()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return 30 s after its context ended")
	}
}
