package notify

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/stretchr/testify/require"
)

// The environment the D-Bus tests read (scripts/test sets them after
// scripts/install-dbus).
const (
	envDBusBin     = "KNOT_DBUS_BIN"     // the dbus-daemon to run (else dbus-daemon on PATH)
	envRequireDBus = "KNOT_REQUIRE_DBUS" // 1: a missing dbus-daemon fails the test instead of skipping it
)

// sessionBusForTest starts a private session bus (dbus-daemon, listening
// on a socket in the test's temporary folder, with no service activation)
// and returns its address; the bus is stopped when the test ends.
func sessionBusForTest(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "windows" || runtime.GOOS == "darwin" {
		t.Skipf("no freedesktop notifications on %s", runtime.GOOS)
	}
	bin, why := os.Getenv(envDBusBin), ""
	if bin == "" {
		why = "$" + envDBusBin + " is unset and there is no dbus-daemon on PATH"
		bin = "dbus-daemon"
	} else {
		why = "$" + envDBusBin + "=" + bin + " is not a program here"
	}
	if p, err := exec.LookPath(bin); err == nil {
		bin, why = p, ""
	}
	if why != "" {
		msg := "\n************************************************************************\n" +
			"SKIPPING the desktop notification test: " + why + ".\n" +
			"Install it with scripts/install-dbus (Debian's dbus-daemon) to run it.\n" +
			"************************************************************************"
		if os.Getenv(envRequireDBus) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "session.conf")
	// A session bus of our own: one socket, no activation (an installed
	// notification daemon must not be started), everyone allowed.
	require.NoError(t, os.WriteFile(conf, []byte(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=`+filepath.Join(dir, "bus")+`</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`), 0o600))
	cmd := exec.Command(bin, "--config-file="+conf, "--print-address", "--nofork")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr testutil.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // the bus is ours, and only ours
		_ = cmd.Wait()         // killed: its status says so
	})
	addr := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		addr <- strings.TrimSpace(line)
	}()
	select {
	case a := <-addr:
		require.NotEmpty(t, a, "dbus-daemon printed no address; it said: %s", stderr.String())
		return a
	case <-time.After(30 * time.Second):
		t.Fatalf("dbus-daemon printed no address in 30s; it said: %s", stderr.String())
	}
	return ""
}

// notificationServer is a freedesktop notification server on a bus: it
// records each Notify call.
type notificationServer struct {
	mu    sync.Mutex
	calls []notifyCall
}

type notifyCall struct {
	App, Icon, Summary, Body string
	Replaces                 uint32
	Actions                  []string
	Hints                    map[string]dbus.Variant
	Timeout                  int32
}

// Notify is org.freedesktop.Notifications.Notify.
func (s *notificationServer) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, notifyCall{app, icon, summary, body, replaces, actions, hints, timeout})
	return uint32(len(s.calls)), nil
}

func (s *notificationServer) got() []notifyCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]notifyCall(nil), s.calls...)
}

// serveNotifications exports a notificationServer on the bus at addr
// under the freedesktop name, until the test ends.
func serveNotifications(t *testing.T, addr string) *notificationServer {
	t.Helper()
	conn, err := dbus.Connect(addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() }) // the test's own connection
	s := &notificationServer{}
	require.NoError(t, conn.Export(s, notifyPath, notifyDest))
	reply, err := conn.RequestName(notifyDest, dbus.NameFlagDoNotQueue)
	require.NoError(t, err)
	require.Equal(t, dbus.RequestNameReplyPrimaryOwner, reply)
	return s
}

// TestDBus_NotifiesOnSessionBus sends events through a real session bus
// to a notification server on it: each once, as the specification has
// it, with the markup of a body escaped.
func TestDBus_NotifiesOnSessionBus(t *testing.T) {
	addr := sessionBusForTest(t)
	srv := serveNotifications(t, addr)
	var log logBuf
	n := start(t, Options{Sinks: []Sink{DBus{Address: addr}}, Log: log.logger()})
	evs := events(time.Now())
	evs[1].Message = `exit 1: <b>bold</b> & <a href="http://x">link</a>`
	for _, e := range append(evs, evs...) {
		n.Notify(e)
	}
	flush(t, n)
	got := srv.got()
	require.Len(t, got, 3, "log: %s", log.String())
	for i, e := range evs {
		c := got[i]
		require.Equal(t, "knotd", c.App)
		require.Equal(t, e.Title, c.Summary)
		require.Equal(t, uint32(0), c.Replaces)
		require.Equal(t, int32(-1), c.Timeout)
		require.Empty(t, c.Actions)
		want := byte(1)
		if i == 0 {
			want = 2 // a question stays until seen
		}
		require.Equal(t, dbus.MakeVariant(want), c.Hints["urgency"])
	}
	require.Equal(t, evs[0].Message, got[0].Body)
	require.Equal(t, `exit 1: &lt;b&gt;bold&lt;/b&gt; &amp; &lt;a href="http://x"&gt;link&lt;/a&gt;`, got[1].Body)
	require.Empty(t, log.String())
}

// TestDBus_NoServerLogged: a bus with no notification server (nobody owns
// the name) and no bus at all are logged, and the other sinks still get
// the event.
func TestDBus_NoServerLogged(t *testing.T) {
	addr := sessionBusForTest(t)
	tests := []struct {
		name, addr string
		want       string
	}{
		{"no server", addr, "org.freedesktop.Notifications"},
		{"no bus", "unix:path=" + filepath.Join(t.TempDir(), "none"), "connect to the session bus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log logBuf
			rec := &recorder{}
			n := start(t, Options{Sinks: []Sink{DBus{Address: tt.addr}, rec}, Log: log.logger(), Timeout: 5 * time.Second})
			n.Notify(events(time.Now())[0])
			flush(t, n)
			require.Len(t, rec.got(), 1)
			require.True(t, contains(log.String(), "cannot notify", "sink=desktop", tt.want), "log: %s", log.String())
		})
	}
}

// TestDBus_SessionBusFromEnvironment: with no address given, the sink
// finds the bus as a session does, and says why when there is none.
func TestDBus_SessionBusFromEnvironment(t *testing.T) {
	addr := sessionBusForTest(t)
	srv := serveNotifications(t, addr)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)
	require.NoError(t, DBus{}.Send(context.Background(), events(time.Now())[0]))
	require.Len(t, srv.got(), 1)

	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	err := DBus{}.Send(context.Background(), events(time.Now())[0])
	require.ErrorContains(t, err, "no session bus")
}
