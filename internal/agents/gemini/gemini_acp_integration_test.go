package gemini_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agents/gemini/geminitest"
)

// TestGemini_RealCLIACPPassesTextVerbatim pins the one way found to give
// Gemini CLI 0.61.0 a prompt with no "@" processing (see
// TestGemini_RealCLIAtReferences): ACP mode, gemini --acp, where a text
// block of session/prompt reaches the model byte for byte even when it
// names a vault file. This is the fact the gemini preset's ACP driver is
// built on, pinned with a minimal client of its own (which, unlike the
// preset, sends authenticate); TestGemini_RealCLIVerbatim checks the same
// through the preset.
func TestGemini_RealCLIACPPassesTextVerbatim(t *testing.T) {
	t.Parallel()
	const note = atNote
	bin := geminitest.GeminiCLI(t)
	api := geminitest.NewGemini(t)
	env := api.GeminiEnv(t.TempDir(), true)
	vault := t.TempDir()
	writeAtSecret(t, vault)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--acp")
	cmd.Dir, cmd.Env, cmd.WaitDelay = vault, env, 10*time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	defer func() {
		if !exited {
			cancel()
			_ = cmd.Wait()
		}
	}()

	enc, dec := json.NewEncoder(stdin), json.NewDecoder(stdout)
	id := 0
	// call sends a request and returns its result, answering the agent's
	// own requests (permission prompts) with "cancelled" meanwhile.
	call := func(method string, params any) map[string]any {
		t.Helper()
		id++
		if err := enc.Encode(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
			t.Fatalf("send %s: %v", method, err)
		}
		for {
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result map[string]any  `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if err := dec.Decode(&msg); err != nil {
				t.Fatalf("%s: read: %v", method, err)
			}
			switch {
			case msg.Method != "" && msg.ID != nil:
				_ = enc.Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID,
					"result": map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}})
			case msg.Method == "" && string(msg.ID) == strconv.Itoa(id):
				if msg.Error != nil {
					t.Fatalf("%s: error %s", method, msg.Error)
				}
				return msg.Result
			}
		}
	}
	call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	call("authenticate", map[string]any{"methodId": "gemini-api-key"})
	session, _ := call("session/new", map[string]any{"cwd": vault, "mcpServers": []any{}})["sessionId"].(string)
	if session == "" {
		t.Fatal("session/new returned no sessionId")
	}
	res := call("session/prompt", map[string]any{"sessionId": session,
		"prompt": []any{map[string]any{"type": "text", "text": note}}})
	if res["stopReason"] != "end_turn" {
		t.Errorf("session/prompt = %v; want stopReason end_turn", res)
	}
	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	exited = true
	if err != nil {
		t.Errorf("gemini --acp after its input closed: %v\nstderr %s", err, &stderr)
	}

	calls := api.ChatRequests()
	if len(calls) != 1 {
		t.Fatalf("the stand-in saw %d conversation calls; want 1", len(calls))
	}
	if got := calls[0].UserTexts(); !slices.Equal(got, []string{note}) {
		t.Errorf("the model saw user turns %q; want the note byte for byte %q", got, note)
	}
	for _, r := range api.Requests() {
		if bytes.Contains(r.Body, []byte("TOP SECRET")) {
			t.Errorf("%s %s carried the referenced file's content", r.Method, r.Path)
		}
	}
}
