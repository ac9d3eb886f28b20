package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/knotd/knotd/internal/transcript"
	"github.com/knotd/knotd/internal/vault"
)

// scenarioDir holds the end-to-end scenarios: scripts of file operations
// and knotd processes with the runs and tie-offs they must lead to. The
// format is described in its README.md.
var scenarioDir = filepath.Join("..", "..", "testdata", "scenarios")

// TestScenarios runs every testdata/scenarios/*.txt against real knotd
// processes, each in a vault, state directory and config directory of its
// own.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(scenarioDir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no scenarios in %s", scenarioDir)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txt")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			steps, err := parseScenario(file)
			if err != nil {
				t.Fatal(err)
			}
			runScenario(t, file, steps)
		})
	}
}

// scenarioCommands are the commands of the scenario language (see
// testdata/scenarios/README.md).
var scenarioCommands = []string{"agent", "flags", "write", "append", "touch", "rename", "mkdir", "rm",
	"once", "start", "stop", "kill", "restart", "settle", "runs", "expect"}

// step is one line of a scenario, with its here-document or quoted text.
type step struct {
	line    int
	args    []string
	body    string
	hasBody bool
}

func (s step) String() string { return strings.Join(s.args, " ") }

// parseScenario reads a scenario: one command a line, words separated by
// blanks, a word in double quotes read as a Go string, "#" lines and
// blank lines ignored. A line whose last word is <<WORD takes the lines
// up to one that is WORD as its text.
func parseScenario(file string) ([]step, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	var steps []step
	for i := 0; i < len(lines); i++ {
		text := strings.TrimSpace(lines[i])
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		s := step{line: i + 1}
		for text != "" {
			var word string
			if text[0] == '"' {
				q, err := strconv.QuotedPrefix(text)
				if err != nil {
					return nil, fmt.Errorf("%s:%d: bad quoted text: %v", file, i+1, err)
				}
				if word, err = strconv.Unquote(q); err != nil {
					return nil, fmt.Errorf("%s:%d: bad quoted text: %v", file, i+1, err)
				}
				if s.hasBody {
					return nil, fmt.Errorf("%s:%d: one quoted text a line", file, i+1)
				}
				s.body, s.hasBody = word, true
				text = strings.TrimLeft(text[len(q):], " \t")
				continue
			}
			word, text, _ = strings.Cut(text, " ")
			text = strings.TrimLeft(text, " \t")
			if end, ok := strings.CutPrefix(word, "<<"); ok && text == "" {
				if s.hasBody || end == "" {
					return nil, fmt.Errorf("%s:%d: a here-document needs a terminator word and no other text", file, i+1)
				}
				var body strings.Builder
				j := i + 1
				for ; j < len(lines) && lines[j] != end; j++ {
					body.WriteString(lines[j] + "\n")
				}
				if j == len(lines) {
					return nil, fmt.Errorf("%s:%d: here-document not closed by a line %q", file, i+1, end)
				}
				s.body, s.hasBody = body.String(), true
				i = j
				continue
			}
			s.args = append(s.args, word)
		}
		if len(s.args) == 0 {
			return nil, fmt.Errorf("%s:%d: text without a command", file, s.line)
		}
		if !slices.Contains(scenarioCommands, s.args[0]) {
			return nil, fmt.Errorf("%s:%d: unknown command %q", file, s.line, s.args[0])
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// scenario is one running scenario: its vault, its private directories
// and its knotd.
type scenario struct {
	t     *testing.T
	vault string
	env   []string // added to each knotd's environment
	// stateHome is knotd's state directory ($XDG_STATE_HOME/knotd).
	stateHome string
	flags     []string // given to every knotd that watches or does a pass
	config    string   // user config file, "" for none
	logs      testutil.Buffer

	watching *exec.Cmd
	exited   chan error // the watching knotd's Wait
	barriers int        // settle's barrier notes written so far
}

// settleDir is where settle writes its barrier notes; their runs are left
// out of every expectation.
const settleDir = "_settle/"

// signalCommands need Unix signals; scenarios using them skip elsewhere.
var signalCommands = []string{"kill", "stop", "restart"}

func runScenario(t *testing.T, file string, steps []step) {
	for _, s := range steps {
		if !canSignal && slices.Contains(signalCommands, s.args[0]) {
			t.Skipf("SKIPPED: %s:%d: %q needs Unix signals, which %s does not have", file, s.line, s.args[0], runtime.GOOS)
		}
	}
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sc := &scenario{t: t, vault: filepath.Join(home, "vault"), flags: []string{"--debounce", "50ms"}}
	for _, dir := range []string{sc.vault, filepath.Join(home, "config"), filepath.Join(home, "state")} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sc.stateHome = filepath.Join(home, "state", "knotd")
	sc.env = []string{
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"XDG_STATE_HOME=" + filepath.Join(home, "state"),
		"LOCALAPPDATA=" + filepath.Join(home, "state"), // Windows, should XDG_STATE_HOME not be read
		"APPDATA=" + filepath.Join(home, "config"),
	}
	t.Cleanup(func() {
		if sc.watching != nil {
			_ = sc.watching.Process.Kill()
			<-sc.exited
		}
		if t.Failed() && sc.logs.String() != "" {
			t.Logf("knotd's log in %s:\n%s", file, sc.logs.String())
		}
	})
	for _, s := range steps {
		if err := sc.do(s); err != nil {
			t.Fatalf("%s:%d: %s: %v", file, s.line, s.String(), err)
		}
	}
}

// path turns a vault-relative, slash-separated path into a file name.
func (sc *scenario) path(rel string) string {
	return filepath.Join(sc.vault, filepath.FromSlash(rel))
}

func (sc *scenario) do(s step) error {
	want := func(n int, body bool) error {
		if len(s.args)-1 != n || s.hasBody != body {
			return fmt.Errorf("takes %d words%s", n, map[bool]string{true: " and a text (quoted or <<EOF)", false: ""}[body])
		}
		return nil
	}
	switch s.args[0] {
	case "agent":
		if err := want(1, false); err != nil {
			return err
		}
		return sc.useAgent(s.args[1])
	case "flags":
		sc.flags = s.args[1:]
		return nil
	case "write", "append":
		if err := want(1, true); err != nil {
			return err
		}
		p := sc.path(s.args[1])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		mode := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if s.args[0] == "append" {
			mode = os.O_WRONLY | os.O_APPEND
		}
		f, err := os.OpenFile(p, mode, 0o644)
		if err != nil {
			return err
		}
		_, err = f.WriteString(s.body)
		return errors.Join(err, f.Close())
	case "touch":
		if err := want(1, false); err != nil {
			return err
		}
		now := time.Now()
		return os.Chtimes(sc.path(s.args[1]), now, now)
	case "rename":
		if err := want(2, false); err != nil {
			return err
		}
		return os.Rename(sc.path(s.args[1]), sc.path(s.args[2]))
	case "mkdir":
		if err := want(1, false); err != nil {
			return err
		}
		return os.MkdirAll(sc.path(s.args[1]), 0o755)
	case "rm":
		if err := want(1, false); err != nil {
			return err
		}
		if _, err := os.Lstat(sc.path(s.args[1])); err != nil {
			return err
		}
		return os.RemoveAll(sc.path(s.args[1]))
	case "once":
		return sc.once(s.args[1:])
	case "start":
		if err := want(0, false); err != nil {
			return err
		}
		return sc.start()
	case "stop":
		if err := want(0, false); err != nil {
			return err
		}
		return sc.stop(false)
	case "kill":
		if err := want(0, false); err != nil {
			return err
		}
		return sc.stop(true)
	case "restart":
		if err := want(0, false); err != nil {
			return err
		}
		if err := sc.stop(false); err != nil {
			return err
		}
		return sc.start()
	case "settle":
		if err := want(0, false); err != nil {
			return err
		}
		return sc.settle()
	case "runs":
		if err := want(1, false); err != nil {
			return err
		}
		n, err := strconv.Atoi(s.args[1])
		if err != nil {
			return err
		}
		runs, err := sc.runs()
		if err != nil {
			return err
		}
		if len(runs) != n {
			return fmt.Errorf("%d runs; want %d:\n%s", len(runs), n, strings.Join(runs, "\n"))
		}
		return nil
	case "expect":
		if len(s.args) < 2 {
			return errors.New("expect what? runs, tieoff, file or absent")
		}
		return sc.expect(s)
	}
	return fmt.Errorf("unknown command %q", s.args[0])
}

// useAgent makes name the agent of every later knotd: the built-in digest,
// or echo, a fake agent (a real subprocess) that replies "ECHO: " and the
// first line of its prompt.
func (sc *scenario) useAgent(name string) error {
	switch name {
	case "digest":
		sc.config = ""
		return nil
	case "echo":
		calls := sc.t.TempDir()
		sc.config = filepath.Join(sc.t.TempDir(), "config.yaml")
		yaml := fmt.Sprintf("default_agent: echo\nagents:\n  echo:\n    command: [%q]\n    env: {%s: %s, %s: %q}\n",
			fakeagent.Program(sc.t), fakeagent.EnvBehaviour, fakeagent.Echo, fakeagent.EnvState, calls)
		return os.WriteFile(sc.config, []byte(yaml), 0o600)
	}
	return fmt.Errorf("unknown agent %q: digest or echo", name)
}

// command returns a knotd process with the scenario's environment.
func (sc *scenario) command(args ...string) *exec.Cmd {
	cmd := knotdProcess(sc.t, args...)
	cmd.Env = append(cmd.Env, sc.env...)
	return cmd
}

// knotdArgs are the arguments of a knotd that watches or does a pass.
func (sc *scenario) knotdArgs(extra ...string) []string {
	args := slices.Clone(sc.flags)
	if sc.config != "" {
		args = append(args, "--config", sc.config)
	}
	return append(append(args, extra...), sc.vault)
}

// output runs cmd to its end, at most waitTimeout, and returns its
// standard output, its standard error going to the scenario's log.
func (sc *scenario) output(cmd *exec.Cmd) (string, error) {
	var stdout testutil.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &sc.logs
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return stdout.String(), fmt.Errorf("knotd %q: %w\n%s", cmd.Args[1:], err, stdout.String())
		}
		return stdout.String(), nil
	case <-time.After(waitTimeout):
		_ = cmd.Process.Kill()
		<-done
		return "", fmt.Errorf("knotd %q still running after %v", cmd.Args[1:], waitTimeout)
	}
}

func (sc *scenario) once(extra []string) error {
	if sc.watching != nil {
		return errors.New("knotd is watching: stop or kill it first")
	}
	_, err := sc.output(sc.command(sc.knotdArgs(append([]string{"--once"}, extra...)...)...))
	return err
}

// start starts knotd watching the vault and returns once its watches are
// in place (it logs "watcher: watching").
func (sc *scenario) start() error {
	if sc.watching != nil {
		return errors.New("knotd is already watching")
	}
	cmd := sc.command(sc.knotdArgs()...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	watching := make(chan bool, 1)
	var copied sync.WaitGroup
	copied.Add(1)
	go func() {
		defer copied.Done()
		buf := make([]byte, 0, 4096)
		said := false
		chunk := make([]byte, 4096)
		for {
			n, err := stderr.Read(chunk)
			_, _ = sc.logs.Write(chunk[:n])
			if !said {
				buf = append(buf, chunk[:n]...)
				if bytes.Contains(buf, []byte(`msg="watcher: watching"`)) {
					said = true
					watching <- true
				}
			}
			if err != nil {
				if !said {
					watching <- false
				}
				return
			}
		}
	}()
	go func() {
		copied.Wait() // Wait closes the pipe: read it all first
		exited <- cmd.Wait()
	}()
	sc.watching, sc.exited = cmd, exited
	select {
	case ok := <-watching:
		if !ok {
			err := <-exited
			sc.watching = nil
			return fmt.Errorf("knotd exited before it was watching: %v", err)
		}
		return nil
	case <-time.After(waitTimeout):
		return fmt.Errorf("knotd not watching after %v", waitTimeout)
	}
}

// stop ends the watching knotd: SIGKILL, or SIGTERM after which it must
// exit 0 in time.
func (sc *scenario) stop(kill bool) error {
	if sc.watching == nil {
		return errors.New("knotd is not watching")
	}
	cmd := sc.watching
	sc.watching = nil
	if kill {
		if err := cmd.Process.Kill(); err != nil {
			return err
		}
		<-sc.exited
		return nil
	}
	if err := terminate(cmd.Process); err != nil {
		return err
	}
	select {
	case err := <-sc.exited:
		if err != nil {
			return fmt.Errorf("knotd after SIGTERM: %v; want exit 0", err)
		}
		return nil
	case <-time.After(waitTimeout):
		_ = cmd.Process.Kill()
		<-sc.exited
		return fmt.Errorf("knotd still running %v after SIGTERM", waitTimeout)
	}
}

// listRuns returns the runs knotd runs --json lists, oldest first,
// settle's barriers included.
func (sc *scenario) listRuns() ([]runJSON, error) {
	out, err := sc.output(sc.command("runs", "--json", sc.vault))
	if err != nil {
		return nil, err
	}
	var list []runJSON
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, fmt.Errorf("knotd runs --json: %v:\n%s", err, out)
	}
	slices.Reverse(list)
	return list, nil
}

// runs returns the scenario's runs (settle's left out), oldest first, as
// "EVENT STRAND", followed by the outcome when it is not ok.
func (sc *scenario) runs() ([]string, error) {
	list, err := sc.listRuns()
	if err != nil {
		return nil, err
	}
	var runs []string
	for _, r := range list {
		if strings.HasPrefix(r.Strand, settleDir) {
			continue
		}
		line := r.Event + " " + r.Strand
		switch {
		case r.Torn, r.Problem != "":
			line += " (unreadable)"
		case !r.Finished:
			line += " (unfinished)"
		case r.Outcome != "ok":
			line += " (" + r.Outcome + ")"
		}
		runs = append(runs, line)
	}
	return runs, nil
}

// settle returns once the watching knotd has seen and answered everything
// done before it was called. Each round writes a new barrier note and
// waits for its run: the watcher hands on a path only after every path
// that settled before it, and the barrier, a new note, waits the same
// quiet period as other new and deleted notes, so by then every earlier
// change has been reconciled and its run has started. Rounds repeat until
// one sees no run but its barrier's, as runs write files of their own
// (tie-offs) whose events must be seen too.
func (sc *scenario) settle() error {
	if sc.watching == nil {
		return errors.New("settle waits for a watching knotd: start it first")
	}
	before := -1
	for round := 0; round < 10; round++ {
		sc.barriers++
		barrier := fmt.Sprintf("%s%d.md", settleDir, sc.barriers)
		if err := os.MkdirAll(sc.path(settleDir), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(sc.path(barrier), fmt.Appendf(nil, "settle barrier %d\n", sc.barriers), 0o644); err != nil {
			return err
		}
		var n int
		deadline := time.Now().Add(waitTimeout)
		for {
			// What knotd runs --json lists, read here rather than by a
			// knotd process each poll.
			dir, _, err := vault.RunsDir(sc.stateHome, sc.vault)
			if err != nil {
				return err
			}
			list, err := transcript.List(dir)
			if err != nil {
				return err
			}
			done := false
			n = 0
			for _, r := range list {
				switch {
				case r.Strand == barrier:
					done = r.Finished
				case !strings.HasPrefix(r.Strand, settleDir):
					n++
				}
			}
			if done {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("gave up after %v waiting for the run of the barrier note %s", waitTimeout, barrier)
			}
			select {
			case err := <-sc.exited:
				sc.watching = nil
				return fmt.Errorf("knotd exited while settling: %v", err)
			case <-time.After(10 * time.Millisecond): // a poll interval, not a wait for an effect
			}
		}
		if n == before {
			return nil
		}
		before = n
	}
	return errors.New("knotd never went quiet: every round of 10 saw new runs")
}

var (
	timestampLine = regexp.MustCompile(`(?m)^## Timestamp: .*$`)
	runMarkerLine = regexp.MustCompile(`(?m)^<!-- knot:run .* -->$`)
)

// normalizeTieOff replaces what differs from run to run in a tie-off
// (times, run ids, hashes, sessions) with placeholders.
func normalizeTieOff(s string) string {
	s = timestampLine.ReplaceAllString(s, "## Timestamp: <time>")
	return runMarkerLine.ReplaceAllString(s, "<!-- knot:run <run> -->")
}

func (sc *scenario) expect(s step) error {
	what := s.args[1]
	switch what {
	case "runs":
		if len(s.args) != 2 || !s.hasBody {
			return errors.New("takes the runs as text: one \"EVENT STRAND\" a line")
		}
		got, err := sc.runs()
		if err != nil {
			return err
		}
		want := strings.Split(strings.TrimSuffix(s.body, "\n"), "\n")
		if s.body == "" {
			want = nil
		}
		// A strand's runs come in order; runs of different strands may
		// come in either.
		byStrand := func(a, b string) int {
			_, sa, _ := strings.Cut(a, " ")
			_, sb, _ := strings.Cut(b, " ")
			sa, _, _ = strings.Cut(sa, " ")
			sb, _, _ = strings.Cut(sb, " ")
			return strings.Compare(sa, sb)
		}
		sortedGot, sortedWant := slices.Clone(got), slices.Clone(want)
		slices.SortStableFunc(sortedGot, byStrand)
		slices.SortStableFunc(sortedWant, byStrand)
		if !slices.Equal(sortedGot, sortedWant) {
			return fmt.Errorf("runs differ\n--- got\n%s\n--- want\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		return nil
	case "tieoff", "file":
		if len(s.args) != 3 || !s.hasBody {
			return fmt.Errorf("expect %s takes a path and the content as text", what)
		}
		rel := s.args[2]
		if what == "tieoff" {
			var err error
			if rel, err = strand.TieOffPath(rel); err != nil {
				return err
			}
		}
		b, err := os.ReadFile(sc.path(rel))
		if err != nil {
			return err
		}
		got := string(b)
		if what == "tieoff" {
			got = normalizeTieOff(got)
		}
		if got != s.body {
			return fmt.Errorf("%s differs\n--- got\n%s--- want\n%s---", rel, got, s.body)
		}
		return nil
	case "absent":
		if len(s.args) != 3 || s.hasBody {
			return errors.New("expect absent takes a path")
		}
		if _, err := os.Lstat(sc.path(s.args[2])); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s is there (%v); want it absent", s.args[2], err)
		}
		return nil
	}
	return fmt.Errorf("expect %s: want runs, tieoff, file or absent", what)
}
