//go:build unix

package control

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// nobody is the uid of another local user, for the tests that run as root.
const nobody = 65534

// TestClient_RefusesASocketNotOurs: a client checks the socket's folder
// and the socket as the daemon does before it listens: a folder another
// user made (the short folder in the shared temporary directory, made
// first), one others can open, a symbolic link to a folder, a socket of
// another user's, or a file that is no socket, is refused with ErrNotOurs
// and never connected to, though something answers there. A folder or
// socket that is not there is no daemon.
func TestClient_RefusesASocketNotOurs(t *testing.T) {
	root := os.Getuid() == 0
	tests := []struct {
		name     string
		asRoot   bool                                  // needs chown
		setup    func(t *testing.T, dir string) string // returns the socket path
		notOurs  bool
		noDaemon bool
	}{
		{"ours", false, func(t *testing.T, dir string) string { return listenAt(t, filepath.Join(dir, socketName)) }, false, false},
		{"folder of another user", true, func(t *testing.T, dir string) string {
			p := listenAt(t, filepath.Join(dir, socketName))
			require.NoError(t, os.Chown(dir, nobody, nobody))
			return p
		}, true, false},
		{"folder others can open", false, func(t *testing.T, dir string) string {
			p := listenAt(t, filepath.Join(dir, socketName))
			require.NoError(t, os.Chmod(dir, 0o755))
			return p
		}, true, false},
		{"folder is a symbolic link", false, func(t *testing.T, dir string) string {
			listenAt(t, filepath.Join(dir, socketName))
			link := filepath.Join(t.TempDir(), "l")
			require.NoError(t, os.Symlink(dir, link))
			return filepath.Join(link, socketName)
		}, true, false},
		{"socket of another user", true, func(t *testing.T, dir string) string {
			p := listenAt(t, filepath.Join(dir, socketName))
			require.NoError(t, os.Lchown(p, nobody, nobody))
			return p
		}, true, false},
		{"a file, no socket", false, func(t *testing.T, dir string) string {
			p := filepath.Join(dir, socketName)
			require.NoError(t, os.WriteFile(p, nil, 0o600))
			return p
		}, true, false},
		{"no socket", false, func(t *testing.T, dir string) string { return filepath.Join(dir, socketName) }, false, true},
		{"no folder", false, func(t *testing.T, dir string) string { return filepath.Join(dir, "gone", socketName) }, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.asRoot && !root {
				t.Skip("needs root, to give a file to another user")
			}
			path := tt.setup(t, folder(t))
			_, err := (&Client{Path: path}).Status(t.Context())
			switch {
			case tt.notOurs:
				if !errors.Is(err, ErrNotOurs) {
					t.Fatalf("Status through %s: %v; want ErrNotOurs", path, err)
				}
			case tt.noDaemon:
				if !errors.Is(err, ErrNoDaemon) {
					t.Fatalf("Status through %s: %v; want ErrNoDaemon", path, err)
				}
			default:
				require.NoError(t, err)
			}
		})
	}
}

// listenAt serves a fakeBackend on a socket at p until the test ends, as
// any process could (not through Listen, which checks the folder), and
// returns p.
func listenAt(t *testing.T, p string) string {
	t.Helper()
	ln, err := net.Listen("unix", p)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, &fakeBackend{}, nil) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return p
}

// TestShortSocket_MadeFirstByAnotherUser: where the socket path is too
// long, the short folder in the temporary directory, made first by another
// user (who answers there), is refused by the daemon (Listen) and by the
// client alike.
func TestShortSocket_MadeFirstByAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root, to make a folder of another user's")
	}
	t.Setenv("TMPDIR", t.TempDir())
	long := filepath.Join(t.TempDir(), strings.Repeat("v", 120))
	path := SocketPath(long)
	dir := filepath.Dir(path)
	require.Equal(t, filepath.Join(os.TempDir(), "knotd-"+strconv.Itoa(os.Getuid())), dir)
	require.NoError(t, os.Mkdir(dir, 0o700))
	listenAt(t, path) // the other user's process, answering in knotd's place
	require.NoError(t, os.Chown(dir, nobody, nobody))
	require.NoError(t, os.Lchown(path, nobody, nobody))

	_, err := (&Client{Path: path}).Status(t.Context())
	if !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), dir) {
		t.Errorf("Status through another user's %s: %v; want ErrNotOurs naming the folder", path, err)
	}
	if ln, err := Listen(path); !errors.Is(err, ErrNotOurs) {
		if ln != nil {
			_ = ln.Close()
		}
		t.Errorf("Listen in another user's folder: %v; want ErrNotOurs", err)
	}
}
