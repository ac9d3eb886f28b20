package vault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/scheduler"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/statedir"
	"github.com/knotd/knotd/internal/testutil"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/knotd/knotd/internal/watcher"
)

// waitTimeout bounds every wait of these tests: long enough never to be
// reached on a loaded machine, short enough to fail a hung test.
const waitTimeout = 90 * time.Second

// mustDo fails the test if err is not nil.
func mustDo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// env is a vault in a temporary directory with its own user config
// directory (the user's real config is never read) and a state directory
// for fake agents.
type env struct {
	t         testing.TB
	root      string
	home      string // knotd's state directory (this device's)
	configDir string
	state     string // fake agents' calls, conversations and gates
	flags     config.Settings
	grace     time.Duration
}

func newEnv(t testing.TB) *env {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	debounce, maxWait, conc := 50*time.Millisecond, 2*time.Second, 2
	e := &env{
		t: t, root: root, home: t.TempDir(), configDir: t.TempDir(), state: t.TempDir(),
		flags: config.Settings{Debounce: &debounce, MaxWait: &maxWait, Concurrency: &conc},
		grace: 5 * time.Second,
	}
	// Registered first, so it runs last, after every vault of the test is
	// closed: whatever the test did, the state store it leaves is sound.
	t.Cleanup(e.checkState)
	return e
}

// checkState checks the invariants of the vault's state store, if knotd
// made one (state.Store.Check, content included).
func (e *env) checkState() {
	f, ok, err := statedir.Find(e.home, e.root)
	if err != nil || !ok {
		return
	}
	if _, err := os.Stat(f.StateFile()); err != nil {
		return
	}
	s, err := state.Open(f.StateFile())
	if err != nil {
		e.t.Errorf("the state store the test leaves cannot be opened: %v", err)
		return
	}
	if err := s.Check(true); err != nil {
		e.t.Errorf("the state store the test leaves is not sound: %v", err)
	}
	if err := s.Close(); err != nil {
		e.t.Errorf("close the state store: %v", err)
	}
}

// userConfig writes the user config file.
func (e *env) userConfig(yaml string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.configDir, config.ConfigFile), []byte(yaml), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// fakeAgentYAML returns an agents: entry for a fake agent, run as a
// generic command (preset "") or with a preset whose program is the fake.
func (e *env) fakeAgentYAML(name, preset, behaviour string, args ...string) string {
	e.t.Helper()
	argv := append([]string{fakeagent.Program(e.t)}, args...)
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	s := fmt.Sprintf("  %s:\n", name)
	if preset != "" {
		s += fmt.Sprintf("    preset: %s\n", preset)
	}
	s += fmt.Sprintf("    command: [%s]\n", strings.Join(quoted, ", "))
	s += fmt.Sprintf("    env: {%s: %q, %s: %q}\n", fakeagent.EnvBehaviour, behaviour, fakeagent.EnvState, e.state)
	return s
}

// useConversing makes the default agent a fake one that keeps a
// conversation (it is handed the strand's session), so that knotd writes
// knot_session into strands for it where it writes sessions
// (writeSessions).
func (e *env) useConversing() {
	e.t.Helper()
	e.useAgent("", fakeagent.Echo, "--session={session}")
}

// writeSessions adds write_session: true to the user config (written
// before): knotd then writes knot_session into a note before its first
// run with an agent that keeps a conversation. By default it writes none.
func (e *env) writeSessions() {
	e.t.Helper()
	cfg, err := os.ReadFile(filepath.Join(e.configDir, config.ConfigFile))
	if err != nil {
		e.t.Fatal(err)
	}
	e.userConfig("write_session: true\n" + string(cfg))
}

// useAgent makes a fake agent the default agent.
func (e *env) useAgent(preset, behaviour string, args ...string) {
	e.t.Helper()
	e.userConfig("default_agent: fake\nagents:\n" + e.fakeAgentYAML("fake", preset, behaviour, args...))
}

func (e *env) abs(rel string) string { return filepath.Join(e.root, filepath.FromSlash(rel)) }

func (e *env) write(rel, content string) {
	e.t.Helper()
	p := e.abs(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(e.abs(rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func (e *env) remove(rel string) {
	e.t.Helper()
	if err := os.Remove(e.abs(rel)); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) rename(from, to string) {
	e.t.Helper()
	if err := os.MkdirAll(filepath.Dir(e.abs(to)), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Rename(e.abs(from), e.abs(to)); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) exists(rel string) bool {
	_, err := os.Lstat(e.abs(rel))
	return err == nil
}

func (e *env) options() Options {
	return Options{ConfigDir: e.configDir, Flags: e.flags, Grace: e.grace, StateHome: e.home}
}

// folder returns the vault's folder in the state directory.
func (e *env) folder() statedir.Folder {
	e.t.Helper()
	f, ok, err := statedir.Find(e.home, e.root)
	if err != nil || !ok {
		e.t.Fatalf("the vault has no folder in the state directory %s: %v", e.home, err)
	}
	return f
}

// runsDir returns the vault's transcripts directory.
func (e *env) runsDir() string { return e.folder().Runs() }

// statePath returns the path of the vault's state store.
func (e *env) statePath() string { return e.folder().StateFile() }

// open opens the vault and closes it when the test ends.
func (e *env) open() *Vault {
	e.t.Helper()
	v, err := Open(e.root, e.options())
	if err != nil {
		e.t.Fatalf("Open: %v", err)
	}
	e.t.Cleanup(func() {
		if v.store != nil {
			if err := v.Close(); err != nil {
				e.t.Errorf("Close: %v", err)
			}
		}
	})
	return v
}

// close closes v, failing the test on error.
func (e *env) close(v *Vault) {
	e.t.Helper()
	if err := v.Close(); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
}

// once runs one --once pass.
func (e *env) once(v *Vault, all bool) Summary {
	e.t.Helper()
	sum, err := v.Once(context.Background(), OnceOptions{All: all})
	if err != nil {
		e.t.Fatalf("Once: %v", err)
	}
	return sum
}

// onceFresh opens the vault, runs a pass and closes it: a knotd --once.
func (e *env) onceFresh() Summary {
	e.t.Helper()
	return e.onceWith(e.options(), OnceOptions{})
}

// onceLogged is onceFresh with knotd's log captured.
func (e *env) onceLogged() (Summary, string) {
	e.t.Helper()
	var log testutil.Buffer
	opts := e.options()
	opts.Logger = slog.New(slog.NewTextHandler(&log, nil))
	sum := e.onceWith(opts, OnceOptions{})
	return sum, log.String()
}

// sections reads the tie-off of the strand rel; none if it has none.
func (e *env) sections(rel string) []tieoff.Section {
	e.t.Helper()
	t, err := strand.TieOffPath(rel)
	if err != nil {
		e.t.Fatal(err)
	}
	r, err := os.OpenRoot(e.root)
	if err != nil {
		e.t.Fatal(err)
	}
	defer r.Close()
	secs, perrs, err := tieoff.Read(r, t)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		e.t.Fatalf("read tie-off of %s: %v", rel, err)
	}
	if len(perrs) > 0 {
		e.t.Fatalf("tie-off of %s does not parse: %v", rel, perrs)
	}
	return secs
}

// vaultRoot opens the vault directory as a root, closed when the test ends.
func (e *env) vaultRoot() *os.Root {
	e.t.Helper()
	r, err := os.OpenRoot(e.root)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = r.Close() })
	return r
}

// events returns the event labels of the strand's tie-off sections.
func (e *env) events(rel string) []string {
	e.t.Helper()
	var evs []string
	for _, s := range e.sections(rel) {
		ev := s.Event.String()
		if s.Failed {
			ev += "(failed)"
		}
		evs = append(evs, ev)
	}
	return evs
}

// calls returns the fake agents' recorded calls.
func (e *env) calls() []fakeagent.Call {
	e.t.Helper()
	calls, err := fakeagent.Calls(e.state)
	if err != nil {
		e.t.Fatal(err)
	}
	return calls
}

// release lets call n of the gate agent finish.
func (e *env) release(n int) {
	e.t.Helper()
	if err := os.WriteFile(gateRelease(e.state, n), nil, 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// record returns the store's record of rel.
func record(t testing.TB, v *Vault, rel string) (state.Record, bool) {
	t.Helper()
	rec, ok, err := v.store.Get(rel)
	if err != nil {
		t.Fatal(err)
	}
	return rec, ok
}

// barrierPath is the strand the watch harness writes to know that every
// earlier change has been seen: its knot_mode is off, so it never runs.
const barrierPath = "zz-barrier.md"

// watching is a Watch running in the background, with what the test
// probe saw.
type watching struct {
	e      *env
	v      *Vault
	cancel context.CancelFunc
	done   chan error

	mu       sync.Mutex
	sched    *scheduler.Scheduler[Job]
	batches  [][]watcher.Hint
	atTurn   []int       // batches[i] was reconciled in turn atTurn[i] of Watch's loop
	reports  []RunReport // every Work but the barrier's
	barriers int
	waiting  int // gone strands Watch holds back, at the end of its last turn
	turns    int // turns of Watch's loop
	stopped  bool
}

// watch starts v.Watch and waits until its startup rescan was reconciled
// (the watches are in place).
func (e *env) watch(v *Vault, opts WatchOptions) *watching {
	e.t.Helper()
	w := &watching{e: e, v: v, done: make(chan error, 1)}
	probeOf(v).scheduledFn = func(s *scheduler.Scheduler[Job]) {
		w.mu.Lock()
		w.sched = s
		w.mu.Unlock()
	}
	probeOf(v).reconciledFn = func(hints []watcher.Hint, _ []string) {
		w.mu.Lock()
		w.batches = append(w.batches, slices.Clone(hints))
		w.atTurn = append(w.atTurn, w.turns)
		w.mu.Unlock()
	}
	probeOf(v).workedFn = func(rel string, rep RunReport) {
		if rel == barrierPath {
			return
		}
		w.mu.Lock()
		w.reports = append(w.reports, rep)
		w.mu.Unlock()
	}
	probeOf(v).loopedFn = func(waiting int) {
		w.mu.Lock()
		w.waiting = waiting
		w.turns++
		w.mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go func() { w.done <- v.Watch(ctx, opts) }()
	e.t.Cleanup(func() {
		if err := w.stop(); err != nil {
			e.t.Errorf("Watch: %v", err)
		}
	})
	testutil.WaitFor(e.t, waitTimeout, "the watcher's startup rescan", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return slices.ContainsFunc(w.batches, func(b []watcher.Hint) bool { return slices.ContainsFunc(b, watcher.Hint.Full) })
	})
	return w
}

// stop cancels Watch and returns what it returned.
func (w *watching) stop() error {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return nil
	}
	w.stopped = true
	w.mu.Unlock()
	w.cancel()
	select {
	case err := <-w.done:
		return err
	case <-time.After(waitTimeout):
		return errors.New("Watch did not return after its context ended")
	}
}

// worked returns how many Work calls (other than the barrier's) ended.
func (w *watching) worked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.reports)
}

// runs returns the reports of the runs that happened (Ran), in order.
func (w *watching) runs() []RunReport {
	w.mu.Lock()
	defer w.mu.Unlock()
	var rs []RunReport
	for _, r := range w.reports {
		if r.Ran {
			rs = append(rs, r)
		}
	}
	return rs
}

// settle returns once everything the file system did before it was
// called has been seen and processed, follow-ups included: it writes the
// barrier strand, waits until its new content was reconciled (so every
// earlier change was reconciled too) and no gone strand is held back,
// then waits until the scheduler is idle. It repeats
// this until a round does no work, because a run writes files of its own
// (knot_session) whose events must be seen as well.
func (w *watching) settle() {
	t := w.e.t
	t.Helper()
	for round := 0; ; round++ {
		if round == 10 {
			t.Fatal("settle: the vault never went quiet")
		}
		before := w.worked()
		w.mu.Lock()
		w.barriers++
		n, from := w.barriers, len(w.batches)
		w.mu.Unlock()
		content := fmt.Sprintf("---\nknot_mode: off\n---\nbarrier %d\n", n)
		w.e.write(barrierPath, content)
		// The barrier's new content is recorded only after a reconcile
		// that began after it was written: a file hint, which the
		// watcher sends after the hints of every path that settled
		// before, or a full rescan, which saw everything written before.
		turn := 0
		testutil.WaitFor(t, waitTimeout, "the barrier to be reconciled", func() bool {
			if rec, ok, err := w.v.store.Get(barrierPath); err != nil || !ok || rec.Hash != state.HashOf([]byte(content)) {
				return false
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			found := false
			for i, b := range w.batches[from:] {
				if slices.ContainsFunc(b, func(h watcher.Hint) bool { return h.Full() || h.Path == barrierPath }) {
					turn, found = w.atTurn[from+i], true
				}
			}
			return found
		})
		testutil.WaitFor(t, waitTimeout, "gone strands to be scheduled", func() bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			return w.turns > turn && w.waiting == 0 // the barrier's turn is over
		})
		w.mu.Lock()
		s := w.sched
		w.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		err := s.WaitIdle(ctx)
		cancel()
		if err != nil {
			t.Fatalf("settle: the scheduler did not go idle: %v", err)
		}
		if w.worked() == before {
			return
		}
	}
}
