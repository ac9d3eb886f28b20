package syncthingtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Time limits. Timeout bounds every wait for Syncthing to reach a state;
// nothing waits for a fixed time.
const (
	// Timeout bounds StartPair, Synced, Reconnect and the other waits.
	Timeout = 2 * time.Minute
	// pollInterval is how often a wait asks the REST API again.
	pollInterval = 50 * time.Millisecond
	// requestTimeout bounds one REST request (a scan can take a while).
	requestTimeout = 30 * time.Second
	// stopTimeout is how long a device has to exit after SIGTERM before
	// it is killed.
	stopTimeout = 15 * time.Second
	// logTail is how much of a device's log a failed test prints.
	logTail = 256 << 10
)

// Device is one running Syncthing instance of a pair started by StartPair.
// Its exported fields describe it; do not change them.
type Device struct {
	// Name is the device's name in both configurations: "A" or "B".
	Name string
	// ID is the Syncthing device ID ("MFZWI3D-BONSGYC-...").
	ID string
	// Dir is the path of the shared folder on this device.
	Dir string
	// Home is the device's Syncthing home: config.xml, keys, database and
	// syncthing.log, its output.
	Home string
	// GUIURL is the base URL of its GUI and REST API, "http://127.0.0.1:PORT".
	GUIURL string
	// APIKey is the REST API key, sent as the X-API-Key header.
	APIKey string
	// SyncAddr is the address its sync protocol listens on,
	// "tcp://127.0.0.1:PORT".
	SyncAddr string

	// dialer is true for A, the one device that dials the other. Were
	// both to dial, Syncthing 1.19 can deadlock for 20s when the two dial
	// at once (after a Reconnect, say): each handles connections one at a
	// time, and each waits in its own outgoing connection for a Hello that
	// the other only sends once it gets to the incoming one.
	dialer bool
	// peer is the other device of the pair.
	peer *Device

	bin       string
	transport *http.Transport
	client    *http.Client

	mu   sync.Mutex
	proc *process // nil while stopped
}

// process is one run of syncthing serve.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once Wait has returned
	err  error         // Wait's result, once done is closed
}

// LogPath returns the path of the file that holds everything the device
// has printed, over all its runs.
func (d *Device) LogPath() string {
	return filepath.Join(d.Home, "syncthing.log")
}

// guiHostPort returns the host:port of d's GUI.
func (d *Device) guiHostPort() string {
	return strings.TrimPrefix(d.GUIURL, "http://")
}

// newDevice makes the home of a device called name with shared folder dir,
// its GUI and REST API to listen on guiPort and its sync protocol on
// syncPort: Syncthing generates its keys and configuration there.
func newDevice(t testing.TB, bin, name, dir string, guiPort, syncPort int) (*Device, error) {
	home := t.TempDir()
	key, err := randomString(24)
	if err != nil {
		return nil, err
	}
	// Nobody logs in to the GUI, but no other local user should either.
	password, err := randomString(24)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("syncthing device %s: folder path: %w", name, err)
	}
	tr := &http.Transport{Proxy: nil, DisableCompression: true, MaxIdleConnsPerHost: 4}
	d := &Device{
		Name:      name,
		Dir:       abs,
		Home:      home,
		GUIURL:    "http://127.0.0.1:" + strconv.Itoa(guiPort),
		APIKey:    key,
		SyncAddr:  "tcp://127.0.0.1:" + strconv.Itoa(syncPort),
		bin:       bin,
		transport: tr,
		client:    &http.Client{Transport: tr, Timeout: requestTimeout},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "generate", "--home", home, "--no-default-folder", "--skip-port-probing",
		"--gui-user=syncthingtest", "--gui-password=-")
	cmd.Stdin = strings.NewReader(password + "\n")
	cmd.Env = childEnv(home)
	cmd.WaitDelay = stopTimeout
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("syncthing device %s: %s generate: %w\n%s", name, bin, err, out)
	}
	if d.ID, err = ownDeviceID(home); err != nil {
		return nil, fmt.Errorf("syncthing device %s: %w", name, err)
	}
	return d, nil
}

// childEnv returns the environment for a syncthing process with the given
// home: the test's own, less any Syncthing settings in it (STTRACE is
// kept, for debugging), plus these:
//
//   - STNODEFAULTFOLDER, STNOUPGRADE: no default folder, no upgrades.
//   - STMONITORED: Syncthing 1.19 otherwise runs as a monitor process that
//     starts the real one as its child (even with --no-restart) and
//     forwards signals to it; a killed monitor would leave the child
//     running. The monitor sets this variable for its child, so with it
//     the one process started is the one that syncs.
//   - STHASHING=standard: Go's SHA-256, chosen without the second-long
//     benchmark Syncthing otherwise runs at every start.
func childEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "ST") && !strings.HasPrefix(kv, "STTRACE=") {
			continue
		}
		if home != "" && strings.HasPrefix(kv, "HOME=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "STNODEFAULTFOLDER=1", "STNOUPGRADE=1", "STNORESTART=1", "STMONITORED=yes", "STHASHING=standard")
	if home != "" {
		// Nothing of the user's own Syncthing (~/.config/syncthing) is read.
		env = append(env, "HOME="+home)
	}
	return env
}

// start runs syncthing serve for d, its output appended to LogPath.
func (d *Device) start() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.proc != nil {
		return fmt.Errorf("syncthing %s: already running", d.Name)
	}
	log, err := os.OpenFile(d.LogPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("syncthing %s: open log: %w", d.Name, err)
	}
	cmd := exec.Command(d.bin, "serve",
		"--home", d.Home,
		"--no-browser", "--no-restart", "--no-upgrade", "--no-default-folder",
		"--logfile=-", "--logflags=6")
	cmd.Env = childEnv(d.Home)
	cmd.Dir = d.Home
	cmd.Stdout, cmd.Stderr = log, log
	setProcAttr(cmd)
	_, werr := fmt.Fprintf(log, "=== syncthingtest: starting %s at %s\n", d.Name, time.Now().Format(time.RFC3339Nano))
	if werr == nil {
		werr = cmd.Start()
	}
	// The child has its own copy of the descriptor.
	if cerr := log.Close(); werr == nil && cerr != nil {
		werr = fmt.Errorf("close log: %w", cerr)
	}
	if werr != nil {
		if cmd.Process != nil {
			_ = kill(cmd.Process)
			_ = cmd.Wait()
		}
		return fmt.Errorf("syncthing %s: start: %w", d.Name, werr)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	d.proc = p
	return nil
}

// stop ends d's process, if it runs: SIGTERM, then SIGKILL after
// stopTimeout. It returns once the process has exited.
func (d *Device) stop() error {
	d.mu.Lock()
	p := d.proc
	d.proc = nil
	d.mu.Unlock()
	if p == nil {
		return nil
	}
	d.transport.CloseIdleConnections()
	select {
	case <-p.done:
		return fmt.Errorf("syncthing %s had already exited: %v", d.Name, p.err)
	default:
	}
	if err := terminate(p.cmd.Process); err != nil {
		_ = kill(p.cmd.Process)
	}
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
	}
	_ = kill(p.cmd.Process)
	<-p.done
	return fmt.Errorf("syncthing %s did not exit within %v of SIGTERM; killed", d.Name, stopTimeout)
}

// exited says why d's process has exited, or nil while it runs (or was
// stopped on purpose).
func (d *Device) exited() error {
	d.mu.Lock()
	p := d.proc
	d.mu.Unlock()
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		if p.err == nil {
			return &exitedError{fmt.Sprintf("syncthing %s exited (see its log)", d.Name)}
		}
		return &exitedError{fmt.Sprintf("syncthing %s exited: %v (see its log)", d.Name, p.err)}
	default:
		return nil
	}
}

// logTail returns the end of d's log.
func (d *Device) logTail() string {
	f, err := os.Open(d.LogPath())
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > logTail {
		if _, err := f.Seek(fi.Size()-logTail, io.SeekStart); err != nil {
			return fmt.Sprintf("(cannot read log: %v)", err)
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	return string(b)
}

// request sends one REST request to d and decodes a JSON answer into out
// (when out is not nil).
func (d *Device) request(method, path string, query url.Values, out any) error {
	if err := d.exited(); err != nil {
		return err
	}
	u := d.GUIURL + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return fmt.Errorf("syncthing %s: %s %s: %w", d.Name, method, path, err)
	}
	req.Header.Set("X-API-Key", d.APIKey)
	resp, err := d.client.Do(req)
	if err != nil {
		return fmt.Errorf("syncthing %s: %s %s: %w", d.Name, method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("syncthing %s: %s %s: read answer: %w", d.Name, method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("syncthing %s: %s %s: %s: %s", d.Name, method, path, resp.Status, bytes.TrimSpace(body))
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("syncthing %s: %s %s: decode answer: %w", d.Name, method, path, err)
		}
	}
	return nil
}

// systemStatus is the part of GET /rest/system/status the harness reads.
type systemStatus struct {
	MyID                    string `json:"myID"`
	ConnectionServiceStatus map[string]struct {
		Error        *string  `json:"error"`
		LANAddresses []string `json:"lanAddresses"`
	} `json:"connectionServiceStatus"`
}

// FolderStatus is the part of GET /rest/db/status?folder=vault that tells
// whether a device is in sync.
type FolderStatus struct {
	// State is "idle", "scanning", "syncing", "sync-preparing",
	// "scan-waiting", "sync-waiting", "error"...
	State string `json:"state"`
	// Error says why the folder is stopped, when it is.
	Error string `json:"error"`
	// NeedTotalItems counts the files, directories, symlinks and
	// deletions the device still has to pull.
	NeedTotalItems int `json:"needTotalItems"`
	// NeedDeletes counts the deletions among them.
	NeedDeletes int `json:"needDeletes"`
	// Errors counts the items the last pull failed on.
	Errors int `json:"errors"`
	// GlobalFiles counts the files in the cluster's view of the folder.
	GlobalFiles int `json:"globalFiles"`
	// LocalFiles counts the files on this device.
	LocalFiles int `json:"localFiles"`
	// Sequence grows with every change to the folder's index, local or
	// received.
	Sequence int64 `json:"sequence"`
	// WatchError says why the file system watcher does not run, if so.
	WatchError string `json:"watchError"`
}

// completion is GET /rest/db/completion?folder=vault&device=ID: what this
// device knows of that device's copy of the folder.
type completion struct {
	Completion  float64 `json:"completion"`
	NeedItems   int     `json:"needItems"`
	NeedDeletes int     `json:"needDeletes"`
	// Sequence is the newest index sequence of that device seen here.
	Sequence int64 `json:"sequence"`
}

// connection is one device's entry in GET /rest/system/connections.
type connection struct {
	Connected bool   `json:"connected"`
	Paused    bool   `json:"paused"`
	Address   string `json:"address"`
}

// FolderStatus returns the shared folder's status on d.
func (d *Device) FolderStatus() (FolderStatus, error) {
	var s FolderStatus
	err := d.request(http.MethodGet, "/rest/db/status", url.Values{"folder": {FolderID}}, &s)
	return s, err
}

// completionOf returns what d knows of dev's copy of the folder.
func (d *Device) completionOf(dev *Device) (completion, error) {
	var c completion
	err := d.request(http.MethodGet, "/rest/db/completion", url.Values{"folder": {FolderID}, "device": {dev.ID}}, &c)
	return c, err
}

// connectionTo returns d's view of its connection to peer.
func (d *Device) connectionTo(peer *Device) (connection, error) {
	var res struct {
		Connections map[string]connection `json:"connections"`
	}
	if err := d.request(http.MethodGet, "/rest/system/connections", nil, &res); err != nil {
		return connection{}, err
	}
	c, ok := res.Connections[peer.ID]
	if !ok {
		return connection{}, fmt.Errorf("syncthing %s does not know device %s (%s)", d.Name, peer.Name, peer.ID)
	}
	return c, nil
}

// Connected reports whether d has a connection to peer.
func (d *Device) Connected(peer *Device) (bool, error) {
	c, err := d.connectionTo(peer)
	return c.Connected, err
}

// ready reports nil once d's REST API answers as d, its sync listener is
// up and the shared folder is running.
func (d *Device) ready() error {
	var st systemStatus
	if err := d.request(http.MethodGet, "/rest/system/status", nil, &st); err != nil {
		return err
	}
	if st.MyID != d.ID {
		return fmt.Errorf("syncthing %s: %s answers as device %q, not %s (another process on the port?)", d.Name, d.GUIURL, st.MyID, d.ID)
	}
	l, ok := st.ConnectionServiceStatus[d.SyncAddr]
	switch {
	case !ok:
		return fmt.Errorf("syncthing %s: no listener for %s yet", d.Name, d.SyncAddr)
	case l.Error != nil:
		return fmt.Errorf("syncthing %s: listener %s: %s", d.Name, d.SyncAddr, *l.Error)
	case len(l.LANAddresses) == 0:
		return fmt.Errorf("syncthing %s: listener %s not up yet", d.Name, d.SyncAddr)
	}
	fs, err := d.FolderStatus()
	if err != nil {
		return err
	}
	if fs.State == "" || fs.State == "error" || fs.Error != "" {
		return fmt.Errorf("syncthing %s: folder %q not running: state %q %s", d.Name, FolderID, fs.State, fs.Error)
	}
	return nil
}

// Start starts d again after Stop, with the same home, configuration and
// database, and waits until its REST API answers and its folder runs. The
// two devices connect again at once, unless one has paused the other;
// WaitConnected waits for that.
func (d *Device) Start(t testing.TB) {
	t.Helper()
	if err := d.start(); err != nil {
		t.Fatal(err)
	}
	if err := poll(Timeout, d.ready); err != nil {
		t.Fatalf("syncthing %s did not come up within %v: %v", d.Name, Timeout, err)
	}
	if err := d.nudgeDialer(); err != nil {
		t.Fatal(err)
	}
}

// nudgeDialer makes the peer dial d now, when d is the device that does
// not dial and the peer is running and has not paused d: otherwise it
// would dial on its own only within reconnectionIntervalS (5s). Pausing
// and resuming the device is Syncthing's way to say "dial now".
func (d *Device) nudgeDialer() error {
	peer := d.peer
	if d.dialer || peer == nil || !peer.running() {
		return nil
	}
	c, err := peer.connectionTo(d)
	if err != nil || c.Connected || c.Paused {
		return err
	}
	for _, path := range []string{"/rest/system/pause", "/rest/system/resume"} {
		if err := peer.request(http.MethodPost, path, url.Values{"device": {d.ID}}, nil); err != nil {
			return fmt.Errorf("make %s dial %s: %w", peer.Name, d.Name, err)
		}
	}
	return nil
}

// running reports whether d's process runs.
func (d *Device) running() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.proc != nil
}

// Stop stops d's process (SIGTERM, then SIGKILL after a deadline) and
// waits for it to exit, to simulate a device that is switched off. Start
// brings it back.
func (d *Device) Stop(t testing.TB) {
	t.Helper()
	if err := d.stop(); err != nil {
		t.Error(err)
	}
}

// Scan makes d rescan the shared folder now and returns once the scan is
// done: every change made on disk before the call is then in d's index.
func (d *Device) Scan(t testing.TB) {
	t.Helper()
	if err := d.scan(); err != nil {
		t.Fatal(err)
	}
}

func (d *Device) scan() error {
	return d.request(http.MethodPost, "/rest/db/scan", url.Values{"folder": {FolderID}}, nil)
}

// Pause makes d pause peer (POST /rest/system/pause?device=...), as a
// user who pauses a device does, and waits until d is no longer connected
// to it. The peer keeps trying to connect, and d keeps refusing, until
// Resume; Disconnect pauses on both sides.
func (d *Device) Pause(t testing.TB, peer *Device) {
	t.Helper()
	if err := d.request(http.MethodPost, "/rest/system/pause", url.Values{"device": {peer.ID}}, nil); err != nil {
		t.Fatal(err)
	}
	err := poll(Timeout, func() error {
		c, err := d.connectionTo(peer)
		if err != nil {
			return err
		}
		if c.Connected {
			return fmt.Errorf("syncthing %s still connected to %s", d.Name, peer.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("pause %s on %s: %v", peer.Name, d.Name, err)
	}
}

// Resume undoes Pause (POST /rest/system/resume?device=...): unless the
// peer has paused d too, the two connect again at once. It does not wait
// for the connection (WaitConnected does).
func (d *Device) Resume(t testing.TB, peer *Device) {
	t.Helper()
	if err := d.request(http.MethodPost, "/rest/system/resume", url.Values{"device": {peer.ID}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.nudgeDialer(); err != nil {
		t.Fatal(err)
	}
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago: all n are held open at once, so they differ.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port on 127.0.0.1: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// randomString returns n random bytes as hex.
func randomString(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// poll calls cond every pollInterval until it returns nil, and returns nil;
// or, once timeout has passed, cond's last error. An error from a process
// that has exited ends the wait at once.
func poll(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		var exit *exitedError
		if errors.As(err, &exit) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", timeout, err)
		}
		time.Sleep(pollInterval)
	}
}

// exitedError is returned by requests to a device whose process has died.
type exitedError struct{ msg string }

func (e *exitedError) Error() string { return e.msg }
