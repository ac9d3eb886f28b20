package geminitest

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
)

// geminiFixture returns a request body the real Gemini CLI 0.61.0 sent.
func geminiFixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "recorded", "requests", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// candidateText returns the text of a GenerateContentResponse and its
// promptTokenCount.
func candidateText(t *testing.T, data string) (string, int) {
	t.Helper()
	var r struct {
		Candidates []struct {
			Content struct {
				Role  string `json:"role"`
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"content"`
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
		UsageMetadata struct {
			PromptTokenCount int `json:"promptTokenCount"`
		} `json:"usageMetadata"`
	}
	if err := json.Unmarshal([]byte(data), &r); err != nil {
		t.Fatalf("answer %q: %v", data, err)
	}
	if len(r.Candidates) != 1 || len(r.Candidates[0].Content.Parts) != 1 ||
		r.Candidates[0].Content.Role != "model" || r.Candidates[0].FinishReason != "STOP" {
		t.Fatalf("answer %q: want one model candidate with one part, finished", data)
	}
	return r.Candidates[0].Content.Parts[0].Text, r.UsageMetadata.PromptTokenCount
}

func TestGemini_AnswersRecordedRequests(t *testing.T) {
	s := NewGemini(t)

	// The router asks for JSON fitting its schema.
	status, ctype, body := agenttest.Post(t, s.URL, "/v1beta/models/gemini-3.5-flash-lite:generateContent",
		geminiFixture(t, "json-new.router-request.json"))
	if status != http.StatusOK || ctype != "application/json" {
		t.Fatalf("router call = %d %q; want 200 application/json", status, ctype)
	}
	text, tokens := candidateText(t, body)
	var route map[string]any
	if err := json.Unmarshal([]byte(text), &route); err != nil || route["complexity_score"] != 1.0 ||
		route["complexity_reasoning"] != "" || tokens != 100 {
		t.Errorf("router answer %q (%d prompt tokens); want complexity_score 1, an empty reasoning, 100 tokens", text, tokens)
	}

	for _, tc := range []struct {
		fixture string
		want    string
	}{
		{"json-new.request.json", "MOCK REPLY (user messages seen: 1)"},
		{"json-resume.request.json", "MOCK REPLY (user messages seen: 2)"},
	} {
		status, ctype, body := agenttest.Post(t, s.URL, "/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse",
			geminiFixture(t, tc.fixture))
		if status != http.StatusOK || ctype != "text/event-stream" {
			t.Fatalf("%s: stream call = %d %q; want 200 text/event-stream", tc.fixture, status, ctype)
		}
		data, ok := strings.CutPrefix(body, "data: ")
		if !ok || !strings.HasSuffix(data, "\r\n\r\n") || strings.Count(body, "data: ") != 1 {
			t.Fatalf("%s: stream %q; want one data: chunk", tc.fixture, body)
		}
		if text, _ := candidateText(t, strings.TrimSpace(data)); text != tc.want {
			t.Errorf("%s: reply %q; want %q", tc.fixture, text, tc.want)
		}
	}

	reqs := s.Requests()
	if len(reqs) != 3 || !reqs[0].JSON || reqs[0].Action != "generateContent" || reqs[0].Model != "gemini-3.5-flash-lite" ||
		reqs[1].JSON || reqs[1].Action != "streamGenerateContent" || reqs[1].Query != "alt=sse" {
		t.Fatalf("Requests = %+v; want the router call, then two stream calls", reqs)
	}
	if got := len(s.ChatRequests()); got != 2 {
		t.Errorf("ChatRequests has %d calls; want the 2 stream calls", got)
	}
	wantTurns := []string{"Turn one: should we rewrite the parser?", "Turn two: yes, in Go."}
	if got := reqs[2].UserTexts(); !slices.Equal(got, wantTurns) {
		t.Errorf("UserTexts of the resumed call = %q; want %q", got, wantTurns)
	}
	if !strings.HasPrefix(reqs[1].System, "You are Gemini CLI") {
		t.Errorf("System = %.40q…; want Gemini CLI's system prompt", reqs[1].System)
	}
}

func TestGemini_SetReply(t *testing.T) {
	s := NewGemini(t)
	s.SetReply(func(r GeminiRequest) string { return "a review of " + strings.Join(r.UserTexts(), " + ") })
	tests := []struct {
		name, path, fixture, want string
	}{
		{"conversation call", "/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse", "json-resume.request.json",
			"a review of Turn one: should we rewrite the parser? + Turn two: yes, in Go."},
		{"the router keeps its JSON", "/v1beta/models/gemini-3.5-flash-lite:generateContent", "json-new.router-request.json", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := agenttest.Post(t, s.URL, tt.path, geminiFixture(t, tt.fixture))
			if status != http.StatusOK {
				t.Fatalf("status %d; want 200", status)
			}
			data, _ := strings.CutPrefix(body, "data: ")
			text, _ := candidateText(t, strings.TrimSpace(data))
			if tt.want == "" {
				if !json.Valid([]byte(text)) {
					t.Errorf("router reply %q; want the schema's JSON", text)
				}
				return
			}
			if text != tt.want {
				t.Errorf("reply %q; want %q", text, tt.want)
			}
		})
	}
	s.SetReply(nil)
	_, _, body := agenttest.Post(t, s.URL, "/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse", geminiFixture(t, "json-new.request.json"))
	data, _ := strings.CutPrefix(body, "data: ")
	if text, _ := candidateText(t, strings.TrimSpace(data)); text != "MOCK REPLY (user messages seen: 1)" {
		t.Errorf("after SetReply(nil): reply %q; want the default", text)
	}
}

func TestGemini_ErrorStatuses(t *testing.T) {
	s := NewGemini(t)
	const path = "/v1beta/models/m:generateContent"
	const body = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	wantError := func(answer string, code int, status string) {
		t.Helper()
		var e struct {
			Error struct {
				Code   int    `json:"code"`
				Status string `json:"status"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(answer), &e); err != nil || e.Error.Code != code || e.Error.Status != status {
			t.Errorf("error answer %q; want code %d status %s", answer, code, status)
		}
	}

	s.FailNext(http.StatusInternalServerError, 1)
	st, _, answer := agenttest.Post(t, s.URL, path, body)
	if st != http.StatusInternalServerError {
		t.Fatalf("first call after FailNext(500, 1) = %d; want 500", st)
	}
	wantError(answer, 500, "INTERNAL")
	if st, _, _ := agenttest.Post(t, s.URL, path, body); st != http.StatusOK {
		t.Errorf("second call after FailNext(500, 1) = %d; want 200", st)
	}

	s.SetStatus(http.StatusUnauthorized)
	for range 2 {
		st, _, answer := agenttest.Post(t, s.URL, path, body)
		if st != http.StatusUnauthorized {
			t.Fatalf("call after SetStatus(401) = %d; want 401", st)
		}
		wantError(answer, 401, "UNAUTHENTICATED")
	}
	s.SetStatus(0)

	if st, _, answer := agenttest.Post(t, s.URL, "/v1beta/models/m:countTokens", body); st != http.StatusNotFound {
		t.Errorf("unknown method = %d %q; want 404", st, answer)
	}
	if st, _, _ := agenttest.Post(t, s.URL, path, "{not json"); st != http.StatusBadRequest {
		t.Errorf("bad body = %d; want 400", st)
	}
	var got []int
	for _, r := range s.Requests() {
		got = append(got, r.Status)
	}
	if want := []int{500, 200, 401, 401, 404, 400}; !slices.Equal(got, want) {
		t.Errorf("recorded statuses %v; want %v", got, want)
	}
}

func TestGemini_Env(t *testing.T) {
	s := NewGemini(t)
	home := t.TempDir()
	env := s.GeminiEnv(home, false)
	for _, want := range []string{"HOME=" + home, "GEMINI_API_KEY=dummy", "GOOGLE_GEMINI_BASE_URL=" + s.URL, "TMPDIR=" + filepath.Join(home, "tmp")} {
		if !slices.Contains(env, want) {
			t.Errorf("GeminiEnv lacks %q: %q", want, env)
		}
	}
	if slices.Contains(env, "GEMINI_CLI_TRUST_WORKSPACE=true") {
		t.Errorf("GeminiEnv(home, false) trusts the workspace")
	}
	if !slices.Contains(s.GeminiEnv(home, true), "GEMINI_CLI_TRUST_WORKSPACE=true") {
		t.Errorf("GeminiEnv(home, true) does not trust the workspace")
	}
	data, err := os.ReadFile(filepath.Join(home, ".gemini", "settings.json"))
	if err != nil || !strings.Contains(string(data), `"selectedType": "gemini-api-key"`) {
		t.Errorf("settings.json = %q, %v; want the gemini-api-key auth type", data, err)
	}
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Errorf("URL = %q; want a loopback address", s.URL)
	}
}

// TestGemini_QueuedFunctionCall: a queued call answers the next
// conversation call (not the router's), once; the function's response the
// CLI sends next is shown, and gets the text reply.
func TestGemini_QueuedFunctionCall(t *testing.T) {
	s := NewGemini(t)
	s.QueueFunctionCall(GeminiFunctionCall{Name: "write_file", Args: map[string]any{"file_path": "a.md", "content": "x"}})
	const user = `{"role":"user","parts":[{"text":"write a.md"}]}`

	_, _, body := agenttest.Post(t, s.URL, "/v1beta/models/m:generateContent",
		`{"contents":[`+user+`],"generationConfig":{"responseMimeType":"application/json"}}`)
	if !strings.Contains(body, `"text"`) || strings.Contains(body, "functionCall") {
		t.Errorf("the router's call was answered %s; want text", body)
	}
	_, _, body = agenttest.Post(t, s.URL, "/v1beta/models/m:generateContent", `{"contents":[`+user+`]}`)
	var r struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					FunctionCall *struct {
						Name string         `json:"name"`
						Args map[string]any `json:"args"`
					} `json:"functionCall"`
				} `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || len(r.Candidates) != 1 || len(r.Candidates[0].Content.Parts) != 1 {
		t.Fatalf("answer %s: %v", body, err)
	}
	if fc := r.Candidates[0].Content.Parts[0].FunctionCall; fc == nil || fc.Name != "write_file" || fc.Args["file_path"] != "a.md" {
		t.Fatalf("answer %s; want the queued write_file call", body)
	}

	_, _, body = agenttest.Post(t, s.URL, "/v1beta/models/m:generateContent", `{"contents":[`+user+
		`,{"role":"model","parts":[{"functionCall":{"name":"write_file","args":{}}}]}`+
		`,{"role":"user","parts":[{"functionResponse":{"name":"write_file","response":{"error":"canceled"}}}]}]}`)
	if text, _ := candidateText(t, body); text != "MOCK REPLY (user messages seen: 1)" {
		t.Errorf("after the call: %q; want the text reply", text)
	}
	want := []GeminiFunctionResponse{{Name: "write_file", Response: map[string]any{"error": "canceled"}}}
	if got := s.FunctionResponses(); len(got) != 1 || got[0].Name != want[0].Name || got[0].Response["error"] != "canceled" {
		t.Errorf("FunctionResponses = %+v; want %+v", got, want)
	}
}
