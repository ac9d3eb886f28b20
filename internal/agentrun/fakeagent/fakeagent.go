// Package fakeagent provides fake agent CLIs for tests, in the spirit of
// net/http/httptest: the test binary re-executes itself as the agent, so the
// real subprocess path (argv, standard input, environment, working
// directory, signals, exit status) is exercised without any real CLI.
//
// A package that runs agents in its tests calls Main first thing in its
// TestMain:
//
//	func TestMain(m *testing.M) {
//		fakeagent.Main(nil)
//		os.Exit(m.Run())
//	}
//
// and configures an agent whose program is the test binary and whose
// environment names the behaviour:
//
//	agent := agentrun.Agent{
//		Preset:  "claude",
//		Command: []string{fakeagent.Program(t)},
//		Env:     fakeagent.Env(fakeagent.Claude, stateDir),
//	}
//
// When the test binary starts with EnvBehaviour set, Main runs that
// behaviour instead of the tests and exits with its status. Every fake
// appends a Call to <state>/calls.jsonl, which Calls reads back, so a test
// can check exactly what an agent was given.
//
// The preset fakes (Claude, Codex, Gemini, LLM, Ollama) accept the command
// lines of knotd's presets, keep their conversations under the state
// directory the way the real CLIs do (Claude's per working directory), and
// print output in the real formats. Their reply is
// "FAKE REPLY (user messages seen: N)", N counting the turns of the
// conversation, unless EnvReply sets it; EnvFail makes them fail in the
// ways the real CLIs do. The other behaviours (Echo, JSON, Fail, Empty,
// Huge, Hang, Stubborn, File, LongLine) are small programs for
// testing how a runner copes with agents.
package fakeagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Environment variables read by the fakes.
const (
	// EnvBehaviour names the behaviour the test binary runs as.
	EnvBehaviour = "KNOTD_FAKEAGENT"
	// EnvState is a directory where the fakes keep conversations, pid
	// files and the calls log.
	EnvState = "KNOTD_FAKEAGENT_STATE"
	// EnvReply, when set, is the reply the preset fakes give.
	EnvReply = "KNOTD_FAKEAGENT_REPLY"
	// EnvFail makes a preset fake fail: "error" (the CLI's error output and
	// exit status) or "hang" (block until killed, as Claude Code does when
	// the API keeps answering 401).
	EnvFail = "KNOTD_FAKEAGENT_FAIL"
)

// Behaviour is the body of a fake agent. It returns the exit status.
type Behaviour func(inv *Invocation) int

// Invocation is what a fake agent was started with.
type Invocation struct {
	// Name is the behaviour's name.
	Name string
	// Args are the arguments after the program name.
	Args   []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// State is the state directory (EnvState), "" when unset.
	State string
	// Dir is the working directory.
	Dir string
}

// Main runs the fake agent named by EnvBehaviour and exits with its
// status; it returns at once when EnvBehaviour is unset. extra adds
// behaviours to (or replaces) the built-in ones.
func Main(extra map[string]Behaviour) {
	name := os.Getenv(EnvBehaviour)
	if name == "" {
		return
	}
	behaviours := Behaviours()
	for k, b := range extra {
		behaviours[k] = b
	}
	b, ok := behaviours[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "fakeagent: unknown behaviour %q\n", name)
		os.Exit(127)
	}
	dir, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakeagent: %v\n", err)
		os.Exit(126)
	}
	inv := &Invocation{Name: name, Args: os.Args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		State: os.Getenv(EnvState), Dir: dir}
	os.Exit(b(inv))
}

// Behaviours returns the built-in behaviours by name.
func Behaviours() map[string]Behaviour {
	return map[string]Behaviour{
		Claude: claude, Codex: codex, Gemini: gemini, LLM: llm, Ollama: ollama, ACP: acpAgent,
		Echo: echo, JSON: jsonReply, Fail: fail, Empty: empty, Huge: huge, Hang: hang,
		Stubborn: stubborn, stubbornChild: stubbornGrandchild, File: file, LongLine: longLine,
	}
}

// Program returns the path of the running test binary: the program of
// every fake agent.
func Program(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("fakeagent: %v", err)
	}
	return exe
}

// Env returns the environment that selects a behaviour, for an agent's Env.
// state may be empty for behaviours that keep no state.
func Env(behaviour, state string) map[string]string {
	env := map[string]string{EnvBehaviour: behaviour}
	if state != "" {
		env[EnvState] = state
	}
	return env
}

// Call is one recorded invocation of a fake agent.
type Call struct {
	Behaviour string   `json:"behaviour"`
	Args      []string `json:"args"`
	Dir       string   `json:"dir"`
	// Env holds the variables whose names start with KNOT_ or
	// KNOTD_TEST_, and no others.
	Env   map[string]string `json:"env"`
	Stdin string            `json:"stdin"`
}

const callsFile = "calls.jsonl"

// Calls returns the calls recorded in the state directory, oldest first.
func Calls(state string) ([]Call, error) {
	b, err := os.ReadFile(filepath.Join(state, callsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fakeagent: calls: %w", err)
	}
	var calls []Call
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var c Call
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			return nil, fmt.Errorf("fakeagent: calls: %w", err)
		}
		calls = append(calls, c)
	}
	return calls, nil
}

// record reads all of standard input and appends the call to the calls
// log (when there is a state directory). It returns the input.
func (inv *Invocation) record() (string, error) {
	in, err := io.ReadAll(inv.Stdin)
	if err != nil {
		return "", fmt.Errorf("read stdin: %w", err)
	}
	return string(in), inv.save(string(in))
}

// save appends a call with the given input to the calls log (when there is
// a state directory).
func (inv *Invocation) save(in string) error {
	if inv.State == "" {
		return nil
	}
	c := Call{Behaviour: inv.Name, Args: inv.Args, Dir: inv.Dir, Env: map[string]string{}, Stdin: in}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "KNOT_") || strings.HasPrefix(k, "KNOTD_TEST_") {
			c.Env[k] = v
		}
	}
	line, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return appendLine(filepath.Join(inv.State, callsFile), line)
}

// appendLine appends one line to a file with a single write.
func appendLine(path string, line []byte) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = f.Write(append(line, '\n'))
	return err
}

// die reports an internal error of a fake and returns exit status 125.
func (inv *Invocation) die(err error) int {
	fmt.Fprintf(inv.Stderr, "fakeagent %s: %v\n", inv.Name, err)
	return 125
}
