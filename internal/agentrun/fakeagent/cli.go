package fakeagent

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The preset fakes.
const (
	Claude = "claude"
	Codex  = "codex"
	Gemini = "gemini"
	LLM    = "llm"
	Ollama = "ollama"
)

// EnvPad makes the Codex fake print, before its reply, a command_execution
// event whose output is this many bytes: a JSON line longer than any
// default line buffer.
const EnvPad = "KNOTD_FAKEAGENT_PAD"

// EnvGate makes the Claude fake, in stream-json, stop after its assistant
// message until a file exists at this path, and only then print its
// result: a test can see what reached it while the agent still runs. The
// plain-text fakes (Echo, LLM, Ollama) wait for it after printing their
// reply, and JSON with "lines" after its first lines, before they exit.
const EnvGate = "KNOTD_FAKEAGENT_GATE"

// EnvContext sets how many tokens the Claude fake's context grows by each
// turn of a conversation (default 1000): its assistant message's usage
// says the context holds turns×that many, split as Claude Code splits it
// between input, cache reads and cache writes.
const EnvContext = "KNOTD_FAKEAGENT_CONTEXT"

// conversations stores the turn count of each conversation of one fake CLI
// under the state directory; perDir keys them by working directory too, as
// Claude Code and Gemini CLI do.
type conversations struct{ dir string }

func (inv *Invocation) conversations(cli string, perDir bool) (conversations, error) {
	if inv.State == "" {
		return conversations{}, errors.New(EnvState + " is not set")
	}
	dir := filepath.Join(inv.State, cli)
	if perDir {
		sum := sha256.Sum256([]byte(inv.Dir))
		dir = filepath.Join(dir, hex.EncodeToString(sum[:8]))
	}
	return conversations{dir: dir}, os.MkdirAll(dir, 0o700)
}

var safeID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)

func (c conversations) path(id string) (string, error) {
	if !safeID.MatchString(id) {
		return "", fmt.Errorf("bad conversation id %q", id)
	}
	return filepath.Join(c.dir, id), nil
}

// turns returns the number of turns of a conversation, 0 when it does not
// exist.
func (c conversations) turns(id string) int {
	p, err := c.path(id)
	if err != nil {
		return 0
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// bump adds a turn to a conversation, creating it, and returns the count.
func (c conversations) bump(id string) (int, error) {
	p, err := c.path(id)
	if err != nil {
		return 0, err
	}
	n := c.turns(id) + 1
	return n, os.WriteFile(p, []byte(strconv.Itoa(n)), 0o600)
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func reply(turns int) string {
	if r := os.Getenv(EnvReply); r != "" {
		return r
	}
	return fmt.Sprintf("FAKE REPLY (user messages seen: %d)", turns)
}

// failMode returns EnvFail; "hang" blocks here until the process is killed.
func failMode() string {
	mode := os.Getenv(EnvFail)
	if mode == "hang" {
		sleepForever()
	}
	return mode
}

func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// flags is a tiny parser for the fakes' command lines: value flags take
// the next argument or "=value"; anything unknown is an error, so a test
// notices a preset passing a flag the fake does not know.
type flags struct {
	values map[string]string
	bools  map[string]bool
	rest   []string
}

func parseFlags(args []string, valueFlags, boolFlags []string) (flags, error) {
	f := flags{values: map[string]string{}, bools: map[string]bool{}}
	isValue := func(s string) bool { return contains(valueFlags, s) }
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		switch {
		case a == "-" || !strings.HasPrefix(a, "-"):
			f.rest = append(f.rest, a)
		case isValue(name) && hasVal:
			f.values[name] = val
		case isValue(a):
			if i+1 >= len(args) {
				return f, fmt.Errorf("option '%s' argument missing", a)
			}
			i++
			f.values[a] = args[i]
		case contains(boolFlags, a):
			f.bools[a] = true
		default:
			return f, fmt.Errorf("unknown option '%s'", a)
		}
	}
	return f, nil
}

// oneOf reports an error when the value flag name was given a value not in
// choices, as the real CLIs refuse one.
func (f flags) oneOf(name string, choices ...string) error {
	if v, ok := f.values[name]; ok && !contains(choices, v) {
		return fmt.Errorf("option '%s' argument '%s' is invalid (choices: %s)", name, v, strings.Join(choices, ", "))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
