// Package fakekit is what the fake agent CLIs share: the Invocation a fake
// runs with, the calls log, the conversations they keep under the state
// directory, their command-line parsing, their replies and failure modes,
// and the JSON-RPC side of a fake ACP agent. Each agent's fake lives in its
// folder's test package (claudetest.Fake, codextest.Fake, geminitest.Fake,
// llmtest.Fake, ollamatest.Fake, acptest.Fake), and package fakeagent runs
// them as the test binary re-executed.
package fakekit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
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
	// EnvGate makes the Claude fake, in stream-json, stop after its assistant
	// message until a file exists at this path, and only then print its
	// result: a test can see what reached it while the agent still runs. The
	// plain-text fakes (Echo, LLM, Ollama) wait for it after printing their
	// reply, and JSON with "lines" after its first lines, before they exit.
	EnvGate = "KNOTD_FAKEAGENT_GATE"
	// EnvPad makes the Codex fake, and the Claude fake in stream-json,
	// print before their reply a tool's output this many bytes long: a JSON
	// line longer than any default line buffer.
	EnvPad = "KNOTD_FAKEAGENT_PAD"
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

// Record reads all of standard input and appends the call to the calls
// log (when there is a state directory). It returns the input.
func (inv *Invocation) Record() (string, error) {
	in, err := io.ReadAll(inv.Stdin)
	if err != nil {
		return "", fmt.Errorf("read stdin: %w", err)
	}
	return string(in), inv.Save(string(in))
}

// Save appends a call with the given input to the calls log (when there is
// a state directory).
func (inv *Invocation) Save(in string) error {
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
	return AppendLine(filepath.Join(inv.State, callsFile), line)
}

// AppendLine appends one line to a file with a single write.
func AppendLine(path string, line []byte) (err error) {
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

// Die reports an internal error of a fake and returns exit status 125.
func (inv *Invocation) Die(err error) int {
	fmt.Fprintf(inv.Stderr, "fakeagent %s: %v\n", inv.Name, err)
	return 125
}

// Gated waits for the file EnvGate names, if set, and returns the exit
// status.
func Gated(inv *Invocation) int {
	if gate := os.Getenv(EnvGate); gate != "" {
		if err := WaitFor(gate); err != nil {
			return inv.Die(err)
		}
	}
	return 0
}

// WaitFor waits until a file exists at path, for at most a minute.
func WaitFor(path string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := os.Stat(path)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, fs.ErrNotExist):
			return err
		case time.Now().After(deadline):
			return fmt.Errorf("%s did not appear within a minute", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// EmitJSON prints v as one JSON line.
func EmitJSON(inv *Invocation, v map[string]any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings, numbers and slices of them always marshal
	}
	fmt.Fprintln(inv.Stdout, string(b))
}
