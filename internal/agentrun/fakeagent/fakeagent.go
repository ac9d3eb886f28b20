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
// The preset fakes (Claude, Codex, Gemini, LLM, Ollama), each in its
// agent's folder (internal/agents/<agent>/<agent>test/fake.go, built on
// package fakekit) and listed in Behaviours, accept the command
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
	"fmt"
	"os"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent/fakekit"
	"github.com/knotd/knotd/internal/agents/acp/acptest"
	"github.com/knotd/knotd/internal/agents/claude/claudetest"
	"github.com/knotd/knotd/internal/agents/codex/codextest"
	"github.com/knotd/knotd/internal/agents/gemini/geminitest"
	"github.com/knotd/knotd/internal/agents/llm/llmtest"
	"github.com/knotd/knotd/internal/agents/ollama/ollamatest"
)

// Environment variables read by the fakes (see fakekit).
const (
	// EnvBehaviour names the behaviour the test binary runs as.
	EnvBehaviour = fakekit.EnvBehaviour
	// EnvState is a directory where the fakes keep conversations, pid
	// files and the calls log.
	EnvState = fakekit.EnvState
	// EnvReply, when set, is the reply the preset fakes give.
	EnvReply = fakekit.EnvReply
	// EnvFail makes a preset fake fail (see each fake for its modes).
	EnvFail = fakekit.EnvFail
	// EnvGate makes a fake wait for a file (see fakekit.EnvGate).
	EnvGate = fakekit.EnvGate
	// EnvPad makes the Codex and Claude fakes print a long line (see
	// fakekit.EnvPad).
	EnvPad = fakekit.EnvPad
	// EnvContext sets the Claude fake's context growth
	// (claudetest.EnvFakeContext).
	EnvContext = claudetest.EnvFakeContext
)

// The preset fakes, each in its agent's folder, and the generic ACP agent.
const (
	Claude = "claude" // claudetest.Fake
	Codex  = "codex"  // codextest.Fake
	Gemini = "gemini" // geminitest.Fake
	LLM    = "llm"    // llmtest.Fake
	Ollama = "ollama" // ollamatest.Fake
	ACP    = "acp"    // acptest.Fake: a generic ACP agent, for protocol: acp
)

// Behaviour is the body of a fake agent. It returns the exit status.
type Behaviour = fakekit.Behaviour

// Invocation is what a fake agent was started with.
type Invocation = fakekit.Invocation

// Call is one recorded invocation of a fake agent.
type Call = fakekit.Call

// Calls returns the calls recorded in the state directory, oldest first.
func Calls(state string) ([]Call, error) { return fakekit.Calls(state) }

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
		State: os.Getenv(fakekit.EnvState), Dir: dir}
	os.Exit(b(inv))
}

// Behaviours returns the built-in behaviours by name.
func Behaviours() map[string]Behaviour {
	return map[string]Behaviour{
		Claude: claudetest.Fake, Codex: codextest.Fake, Gemini: geminitest.Fake, LLM: llmtest.Fake,
		Ollama: ollamatest.Fake, ACP: acptest.Fake,
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
		env[fakekit.EnvState] = state
	}
	return env
}
