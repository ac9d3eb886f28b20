package fakeagent

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// claude imitates `claude -p --output-format json|text` of Claude Code
// 2.1.330, including its exact session error messages.
func claude(inv *Invocation) int {
	f, err := parseFlags(inv.Args, []string{"--output-format", "--session-id", "--resume", "--model", "--append-system-prompt"},
		[]string{"-p", "--print", "--verbose"})
	if err != nil || len(f.rest) > 0 || !(f.bools["-p"] || f.bools["--print"]) {
		fmt.Fprintf(inv.Stderr, "error: %v (args %q)\n", err, inv.Args)
		return 1
	}
	if _, err := inv.record(); err != nil {
		return inv.die(err)
	}
	conv, err := inv.conversations(Claude, true)
	if err != nil {
		return inv.die(err)
	}
	id := f.values["--session-id"]
	switch resume := f.values["--resume"]; {
	case resume != "":
		if conv.turns(resume) == 0 {
			fmt.Fprintf(inv.Stderr, "No conversation found with session ID: %s\n", resume)
			return 1
		}
		id = resume
	case id != "":
		if !uuidRE.MatchString(id) {
			fmt.Fprintln(inv.Stderr, "Error: Invalid session ID. Must be a valid UUID.")
			return 1
		}
		if conv.turns(id) > 0 {
			fmt.Fprintf(inv.Stderr, "Error: Session ID %s is already in use.\n", id)
			return 1
		}
	default:
		id = newID()
	}
	if failMode() == "error" {
		out, err := json.Marshal(map[string]any{"type": "result", "subtype": "success", "is_error": true,
			"result":     "API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}",
			"session_id": id, "total_cost_usd": 0, "usage": map[string]any{"input_tokens": 0, "output_tokens": 0}})
		if err != nil {
			return inv.die(err)
		}
		fmt.Fprintln(inv.Stdout, string(out))
		return 1
	}
	n, err := conv.bump(id)
	if err != nil {
		return inv.die(err)
	}
	if f.values["--output-format"] != "json" {
		fmt.Fprintln(inv.Stdout, reply(n))
		return 0
	}
	out, err := json.Marshal(map[string]any{
		"type": "result", "subtype": "success", "is_error": false, "duration_ms": 256, "num_turns": 1,
		"result": reply(n), "session_id": id, "total_cost_usd": 0.0002 * float64(n), "stop_reason": "end_turn",
		"usage": map[string]any{"input_tokens": 10 * n, "output_tokens": 8, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
	})
	if err != nil {
		return inv.die(err)
	}
	fmt.Fprintln(inv.Stdout, string(out))
	return 0
}

// codex imitates `codex exec --json [resume ID] -`.
func codex(inv *Invocation) int {
	f, err := parseFlags(inv.Args, []string{"--model", "-m", "-c", "--config"}, []string{"--json", "--skip-git-repo-check"})
	if err != nil || len(f.rest) == 0 || f.rest[0] != "exec" || f.rest[len(f.rest)-1] != "-" {
		fmt.Fprintf(inv.Stderr, "error: unexpected arguments %q (%v)\n", inv.Args, err)
		return 2
	}
	if _, err := inv.record(); err != nil {
		return inv.die(err)
	}
	conv, err := inv.conversations(Codex, false)
	if err != nil {
		return inv.die(err)
	}
	id := newID()
	switch rest := f.rest[1 : len(f.rest)-1]; {
	case len(rest) == 2 && rest[0] == "resume":
		if conv.turns(rest[1]) == 0 {
			fmt.Fprintf(inv.Stderr, "Error: no rollout found for thread id %s\n", rest[1])
			return 1
		}
		id = rest[1]
	case len(rest) != 0:
		fmt.Fprintf(inv.Stderr, "error: unexpected arguments %q\n", rest)
		return 2
	}
	emit := func(v map[string]any) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err) // maps of strings and numbers always marshal
		}
		fmt.Fprintln(inv.Stdout, string(b))
	}
	emit(map[string]any{"type": "thread.started", "thread_id": id})
	emit(map[string]any{"type": "turn.started"})
	if failMode() == "error" {
		emit(map[string]any{"type": "turn.failed", "error": map[string]any{"message": "unexpected status 401 Unauthorized"}})
		return 1
	}
	n, err := conv.bump(id)
	if err != nil {
		return inv.die(err)
	}
	if pad, _ := strconv.Atoi(os.Getenv(EnvPad)); pad > 0 {
		emit(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_0", "type": "command_execution",
			"command": "cat big.log", "aggregated_output": strings.Repeat("x", pad), "exit_code": 0, "status": "completed"}})
	}
	emit(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_1", "type": "reasoning", "text": "**Reading the note**"}})
	emit(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_2", "type": "agent_message", "text": reply(n)}})
	emit(map[string]any{"type": "turn.completed", "usage": map[string]any{"input_tokens": 1200 * n, "cached_input_tokens": 200, "output_tokens": 34}})
	return 0
}

// gemini imitates `gemini --output-format json [--resume ID]`.
func gemini(inv *Invocation) int {
	f, err := parseFlags(inv.Args, []string{"--output-format", "-o", "--model", "-m", "--resume", "-r"}, nil)
	if err != nil || len(f.rest) > 0 {
		fmt.Fprintf(inv.Stderr, "Unknown arguments: %q (%v)\n", inv.Args, err)
		return 42
	}
	if _, err := inv.record(); err != nil {
		return inv.die(err)
	}
	conv, err := inv.conversations(Gemini, true)
	if err != nil {
		return inv.die(err)
	}
	id := newID()
	if r := f.values["--resume"]; r != "" {
		if conv.turns(r) == 0 {
			fmt.Fprintf(inv.Stderr, "Error resuming session: Invalid session identifier %q.\n", r)
			return 42
		}
		id = r
	}
	out := map[string]any{"session_id": id}
	code := 0
	if failMode() == "error" {
		out["error"] = map[string]any{"type": "FatalAuthenticationError", "message": "API key not valid. Please pass a valid API key.", "code": 41}
		code = 41
	} else {
		n, err := conv.bump(id)
		if err != nil {
			return inv.die(err)
		}
		out["response"] = reply(n)
		out["stats"] = map[string]any{"models": map[string]any{"gemini-2.5-pro": map[string]any{
			"api":    map[string]any{"totalRequests": 1, "totalErrors": 0, "totalLatencyMs": 900},
			"tokens": map[string]any{"prompt": 100 * n, "candidates": 20, "total": 100*n + 20, "cached": 40, "thoughts": 5, "tool": 0},
		}}}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return inv.die(err)
	}
	fmt.Fprintln(inv.Stdout, string(b))
	return code
}

type llmEntry struct {
	ID             string `json:"id"`
	ConversationID string `json:"conversation_id"`
	Model          string `json:"model"`
	Prompt         string `json:"prompt"`
	System         string `json:"system"`
	Response       string `json:"response"`
	InputTokens    int    `json:"input_tokens"`
	OutputTokens   int    `json:"output_tokens"`
}

// llm imitates `llm prompt -d DB ...` and `llm logs list -n 1 --json -d DB`.
// Its "database" is a JSON lines file at the -d path.
func llm(inv *Invocation) int {
	if len(inv.Args) == 0 {
		fmt.Fprintln(inv.Stderr, "Usage: llm [OPTIONS] COMMAND [ARGS]...")
		return 2
	}
	switch inv.Args[0] {
	case "prompt":
		return llmPrompt(inv)
	case "logs":
		return llmLogs(inv)
	}
	fmt.Fprintf(inv.Stderr, "Error: No such command '%s'.\n", inv.Args[0])
	return 2
}

func llmPrompt(inv *Invocation) int {
	f, err := parseFlags(inv.Args[1:], []string{"-d", "--database", "-m", "--model", "-s", "--system", "--cid", "--conversation"}, []string{"--log"})
	if err != nil || len(f.rest) > 0 || f.values["-d"] == "" {
		fmt.Fprintf(inv.Stderr, "Error: %v (args %q)\n", err, inv.Args)
		return 2
	}
	prompt, err := inv.record()
	if err != nil {
		return inv.die(err)
	}
	db := f.values["-d"]
	entries, err := readLLM(db)
	if err != nil {
		return inv.die(err)
	}
	conv, turns := newID(), 1
	if cid := f.values["--cid"]; cid != "" {
		turns = 0
		for _, e := range entries {
			if e.ConversationID == cid {
				turns++
			}
		}
		if turns == 0 {
			fmt.Fprintf(inv.Stderr, "Error: No conversation found with id=%s\n", cid)
			return 1
		}
		conv, turns = cid, turns+1
	}
	if failMode() == "error" {
		fmt.Fprintln(inv.Stderr, "Error: No key found - add one using 'llm keys set openai' or set the OPENAI_API_KEY environment variable")
		return 1
	}
	sys := f.values["--system"]
	if sys == "" {
		sys = f.values["-s"]
	}
	e := llmEntry{ID: newID(), ConversationID: conv, Model: f.values["-m"], Prompt: prompt, System: sys,
		Response: reply(turns), InputTokens: 50 * turns, OutputTokens: 9}
	line, err := json.Marshal(e)
	if err != nil {
		return inv.die(err)
	}
	if err := appendLine(db, line); err != nil {
		return inv.die(err)
	}
	fmt.Fprintln(inv.Stdout, e.Response)
	return 0
}

func llmLogs(inv *Invocation) int {
	f, err := parseFlags(inv.Args[1:], []string{"-n", "--count", "-d", "--database"}, []string{"--json"})
	if err != nil || len(f.rest) != 1 || f.rest[0] != "list" || !f.bools["--json"] || f.values["-n"] != "1" {
		fmt.Fprintf(inv.Stderr, "Error: %v (args %q)\n", err, inv.Args)
		return 2
	}
	if _, err := inv.record(); err != nil {
		return inv.die(err)
	}
	entries, err := readLLM(f.values["-d"])
	if err != nil {
		return inv.die(err)
	}
	if len(entries) > 1 {
		entries = entries[len(entries)-1:]
	}
	if entries == nil {
		entries = []llmEntry{}
	}
	b, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		return inv.die(err)
	}
	fmt.Fprintln(inv.Stdout, string(b))
	return 0
}

func readLLM(db string) ([]llmEntry, error) {
	b, err := os.ReadFile(db)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var entries []llmEntry
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e llmEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return nil, fmt.Errorf("%s: %w", db, err)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// ollama imitates `ollama run --hidethinking MODEL` with the prompt on
// standard input.
func ollama(inv *Invocation) int {
	f, err := parseFlags(inv.Args, nil, []string{"--hidethinking"})
	if err != nil || len(f.rest) != 2 || f.rest[0] != "run" {
		fmt.Fprintf(inv.Stderr, "Error: accepts 1 arg(s), received %d (%v)\n", max(0, len(f.rest)-1), err)
		return 1
	}
	if _, err := inv.record(); err != nil {
		return inv.die(err)
	}
	if failMode() == "error" {
		fmt.Fprintf(inv.Stderr, "Error: pull model manifest: file does not exist\n")
		return 1
	}
	fmt.Fprintln(inv.Stdout, reply(1))
	return 0
}
