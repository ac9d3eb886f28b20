package control

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// failingListener is a real listener whose first fails Accepts fail as
// accept(2) does when the process is out of file descriptors.
type failingListener struct {
	net.Listener
	mu    sync.Mutex
	fails int
	tried int
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	l.tried++
	fail := l.tried <= l.fails
	l.mu.Unlock()
	if fail {
		return nil, &net.OpError{Op: "accept", Net: "unix", Err: os.NewSyscallError("accept", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// syncBuffer is a log's buffer that the test reads while Serve writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServe_AcceptFailuresPass: accept failing (EMFILE), a few times or
// many, does not end the control socket: Serve backs off and answers the
// command once accepting works again, and logs once that it failed and
// once that it recovered.
func TestServe_AcceptFailuresPass(t *testing.T) {
	for _, fails := range []int{1, 3, 9} {
		t.Run(strconv.Itoa(fails)+" failures", func(t *testing.T) {
			path := SocketPath(folder(t))
			real, err := Listen(path)
			require.NoError(t, err)
			ln := &failingListener{Listener: real, fails: fails}
			var logs syncBuffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			b := &fakeBackend{}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- Serve(ctx, ln, b, log) }()
			c := &Client{Path: path}
			// Far longer than the back-off's 2.3s for 9 failures: a
			// command that is never accepted fails the test, not hangs it.
			cctx, ccancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer ccancel()
			st, err := c.Status(cctx)
			require.NoError(t, err, "status after %d failed accepts", fails)
			require.Equal(t, "/v", st.Vault)
			_, err = c.Run(cctx, []string{"a.md"})
			require.NoError(t, err, "a second command")
			cancel()
			require.NoError(t, <-done)
			out := logs.String()
			if n := strings.Count(out, "cannot accept a connection"); n != 1 {
				t.Errorf("said %d times that accepting failed; want once:\n%s", n, out)
			}
			if n := strings.Count(out, "accepts connections again"); n != 1 || !strings.Contains(out, "failed_accepts="+strconv.Itoa(fails)) {
				t.Errorf("said %d times that it recovered (want once, after %d failures):\n%s", n, fails, out)
			}
			if !strings.Contains(out, "too many open files") {
				t.Errorf("the log does not say why accepting failed:\n%s", out)
			}
		})
	}
}
