package codextest

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
)

// mustPost posts body to the OpenAI stand-in and returns the answer's
// status, Content-Type and body.
func mustPost(t *testing.T, s *OpenAI, path, body string) (int, string, string) {
	t.Helper()
	resp, err := http.Post(s.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: read answer: %v", path, err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(data)
}

// recordedRequest returns a request body Codex CLI 0.169.0 sent to the
// recording's stand-in (agents/codex/testdata/recorded/requests).
func recordedRequest(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "recorded", "requests", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestOpenAI_AnswersRecordedRequestsAsTheRecording(t *testing.T) {
	for _, tc := range []struct {
		file    string
		prompts []string
		reply   string
		input   float64
	}{
		{"exec-new.request.json", []string{"Turn one: should we rewrite the parser?"}, "MOCK REPLY (user messages seen: 1)", 100},
		{"exec-resume.request.json", []string{"Turn one: should we rewrite the parser?", "Turn two: yes, in Go."}, "MOCK REPLY (user messages seen: 2)", 200},
	} {
		t.Run(tc.file, func(t *testing.T) {
			s := NewOpenAI(t)
			status, ctype, body := mustPost(t, s, "/v1/responses", recordedRequest(t, tc.file))
			if status != 200 || ctype != "text/event-stream" {
				t.Fatalf("answer %d %q; want 200 text/event-stream", status, ctype)
			}
			events := agenttest.ParseSSE(t, body)
			var names []string
			for i, ev := range events {
				names = append(names, ev.Name)
				if ev.Data["type"] != ev.Name || ev.Data["sequence_number"] != float64(i) {
					t.Errorf("event %d %q: type %v sequence_number %v", i, ev.Name, ev.Data["type"], ev.Data["sequence_number"])
				}
			}
			want := []string{"response.created", "response.in_progress", "response.output_item.added",
				"response.content_part.added", "response.output_text.delta", "response.output_text.done",
				"response.content_part.done", "response.output_item.done", "response.completed"}
			if !slices.Equal(names, want) {
				t.Fatalf("events %q; want %q", names, want)
			}
			if got := events[4].Data["delta"]; got != tc.reply {
				t.Errorf("delta %q; want %q", got, tc.reply)
			}
			resp := events[8].Data["response"].(map[string]any)
			usage := resp["usage"].(map[string]any)
			if resp["status"] != "completed" || resp["model"] != "gpt-6.1-sol" || usage["input_tokens"] != tc.input || usage["output_tokens"] != float64(9) {
				t.Errorf("response.completed: %v", resp)
			}

			reqs := s.ResponseRequests()
			if len(reqs) != 1 {
				t.Fatalf("recorded %d requests; want 1", len(reqs))
			}
			r := reqs[0]
			if r.Status != 200 || r.Model != "gpt-6.1-sol" || !r.Stream {
				t.Errorf("recorded status %d model %q stream %v", r.Status, r.Model, r.Stream)
			}
			if got := r.UserPrompts(); !slices.Equal(got, tc.prompts) {
				t.Errorf("UserPrompts = %q; want %q", got, tc.prompts)
			}
			if dev := r.Texts("developer"); len(dev) == 0 || !strings.HasPrefix(dev[0], "You are Codex") {
				t.Errorf("developer messages %.80q; want Codex's own first", dev)
			}
		})
	}
}

func TestOpenAI_Errors(t *testing.T) {
	s := NewOpenAI(t)
	body := recordedRequest(t, "exec-new.request.json")

	s.SetStatus(http.StatusUnauthorized)
	for range 2 {
		status, _, answer := mustPost(t, s, "/v1/responses", body)
		if status != 401 || !strings.Contains(answer, `"message":"Incorrect API key provided: dummy."`) {
			t.Errorf("with status 401 set: %d %s", status, answer)
		}
	}
	s.SetStatusTimes(http.StatusInternalServerError, 1)
	if status, _, answer := mustPost(t, s, "/v1/responses", body); status != 500 || !strings.Contains(answer, `"type":"server_error"`) {
		t.Errorf("with status 500 set once: %d %s", status, answer)
	}
	if status, _, _ := mustPost(t, s, "/v1/responses", body); status != 200 {
		t.Errorf("after the one 500: %d; want 200", status)
	}
	if status, _, _ := mustPost(t, s, "/v1/chat/completions", body); status != 404 {
		t.Errorf("POST /v1/chat/completions: %d; want 404", status)
	}
	var statuses []int
	for _, r := range s.Requests() {
		statuses = append(statuses, r.Status)
	}
	if want := []int{401, 401, 500, 200, 404}; !slices.Equal(statuses, want) {
		t.Errorf("recorded statuses %v; want %v", statuses, want)
	}
	if n := len(s.ResponseRequests()); n != 4 {
		t.Errorf("ResponseRequests: %d; want 4", n)
	}
}

func TestOpenAI_CodexEnv(t *testing.T) {
	s := NewOpenAI(t)
	dir := t.TempDir()
	env := s.CodexEnv(t, dir)
	for _, want := range []string{"HOME=" + filepath.Join(dir, "home"), "CODEX_HOME=" + CodexHome(dir),
		"TMPDIR=" + filepath.Join(dir, "tmp"), "OPENAI_API_KEY=dummy"} {
		if !slices.Contains(env, want) {
			t.Errorf("CodexEnv lacks %q: %q", want, env)
		}
	}
	config, err := os.ReadFile(filepath.Join(CodexHome(dir), "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`model_provider = "mock"`, `base_url = "` + s.URL + `/v1"`, `wire_api = "responses"`} {
		if !strings.Contains(string(config), want) {
			t.Errorf("config.toml lacks %q:\n%s", want, config)
		}
	}
}
