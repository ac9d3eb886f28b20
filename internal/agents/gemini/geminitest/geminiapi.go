package geminitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
)

// GeminiServer is a loopback stand-in for the Gemini API (Generative
// Language API, v1beta) as Gemini CLI 0.61.0 calls it with an API key,
// started on 127.0.0.1 by NewGemini. It records every request and answers
// the way the stand-in that recorded agents/gemini/testdata/recorded
// did (see the README there):
//
//   - POST /v1beta/models/M:streamGenerateContent?alt=sse: one SSE "data:"
//     chunk holding a GenerateContentResponse;
//   - POST /v1beta/models/M:generateContent: the same response as one JSON
//     object;
//   - a request whose generationConfig.responseMimeType is
//     application/json (the CLI's routing classifier) gets, as its text, a
//     JSON object fitting the request's schema: complexity_score 1, the
//     empty string for other strings;
//   - anything else: a 404 with an API error object, logged to the test.
//
// The reply text is "MOCK REPLY (user messages seen: N)", N counting the
// request's user turns (GeminiRequest.UserTexts), unless the test sets a
// reply with SetReply; usageMetadata says 100·N prompt tokens and 9
// candidate tokens. SetStatus and FailNext make
// it answer with an error status instead; QueueFunctionCall makes it call
// one of the CLI's tools.
type GeminiServer struct {
	// URL is the server's base URL, http://127.0.0.1:PORT, the value for
	// GOOGLE_GEMINI_BASE_URL.
	URL string

	*agenttest.StandIn[GeminiRequest]
	tb testing.TB // GeminiEnv fails its test

	mu    sync.Mutex
	calls []GeminiFunctionCall
	reply func(GeminiRequest) string
}

// GeminiFunctionCall is a call of one of the CLI's tools (functions), as
// the model would make it: Name is the function's name as the CLI
// declares it in the request's tools (write_file, run_shell_command…),
// Args its arguments.
type GeminiFunctionCall struct {
	Name string
	Args map[string]any
}

// GeminiFunctionResponse is the answer to a function call that the CLI
// sends in its next request: Response is the function's result (an
// "error" key when the call failed or was refused).
type GeminiFunctionResponse struct {
	Name     string
	Response map[string]any
}

// GeminiRequest is one HTTP request the Gemini stand-in received, as
// recorded before it was answered.
type GeminiRequest struct {
	Method string
	// Path is the URL path without the query, such as
	// "/v1beta/models/gemini-3.8-flash:streamGenerateContent".
	Path   string
	Query  string
	Header http.Header
	Body   []byte
	// Status is the HTTP status code the stand-in answered with.
	Status int

	// Model and Action name the call: "gemini-3.8-flash" and
	// "streamGenerateContent" or "generateContent". Empty for other paths.
	Model, Action string
	// JSON reports a request for a JSON answer (responseMimeType
	// application/json): the CLI's own routing classifier, not the
	// conversation.
	JSON bool
	// Contents are the request's turns, oldest first.
	Contents []GeminiContent
	// System is the text of systemInstruction's parts, joined with newlines.
	System string

	schema map[string]any
}

// GeminiContent is one entry of a request's "contents".
type GeminiContent struct {
	// Role is "user" or "model".
	Role string
	// Texts are the texts of the entry's text parts, in order; function
	// calls and responses are counted in Other.
	Texts []string
	Other int
	// FunctionResponses are the entry's function responses, in order.
	FunctionResponses []GeminiFunctionResponse
}

// geminiPreamble starts the text part Gemini CLI puts before the first
// prompt of a session (its environment description).
const geminiPreamble = "<session_context>"

// UserTexts returns the text of each user turn of r, without the CLI's
// <session_context> preamble: the prompts the model sees, oldest first. A
// user turn with no other text (a function response, or the preamble in a
// turn of its own) is not counted.
func (r GeminiRequest) UserTexts() []string {
	var out []string
	for _, c := range r.Contents {
		if c.Role != "user" {
			continue
		}
		var texts []string
		for _, t := range c.Texts {
			if !strings.HasPrefix(t, geminiPreamble) {
				texts = append(texts, t)
			}
		}
		if len(texts) > 0 {
			out = append(out, strings.Join(texts, "\n"))
		}
	}
	return out
}

// NewGemini starts a GeminiServer on a loopback port. It is closed when
// tb's test ends (t.Cleanup); Close may also be called earlier.
func NewGemini(tb testing.TB) *GeminiServer {
	tb.Helper()
	s := &GeminiServer{tb: tb}
	s.StandIn = agenttest.NewStandIn[GeminiRequest](tb, (*geminiAPI)(s))
	s.URL = s.StandIn.URL
	return s
}

// SetStatus makes the server answer every later request with the HTTP
// status code and a Gemini API error object (401 UNAUTHENTICATED, 500
// INTERNAL…). 0 restores normal answers.
func (s *GeminiServer) SetStatus(code int) {
	s.Force(code, -1)
}

// FailNext makes the server answer the next n requests with the HTTP
// status code, and later ones normally (Gemini CLI retries a 500 with
// backoff: failing once keeps a test fast). n <= 0 means every request.
func (s *GeminiServer) FailNext(code, n int) {
	if n <= 0 {
		n = -1
	}
	s.Force(code, n)
}

// SetReply makes the server answer later conversation calls (not the
// router's JSON calls) with reply's text; nil restores the default, "MOCK
// REPLY (user messages seen: N)". reply is called from the server's
// handler goroutines, possibly concurrently.
func (s *GeminiServer) SetReply(reply func(GeminiRequest) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reply = reply
}

// QueueFunctionCall makes the server answer the next conversation call
// (ChatRequests) that is not answered with an error status with a call of
// fc instead of its text reply; later calls get the text reply (the CLI
// sends fc's response in the next one). Queued calls are used in order,
// one per conversation call.
func (s *GeminiServer) QueueFunctionCall(fc GeminiFunctionCall) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, fc)
}

// FunctionResponses returns the function responses of the last
// conversation call received so far (which carries the whole
// conversation), in order.
func (s *GeminiServer) FunctionResponses() []GeminiFunctionResponse {
	calls := s.ChatRequests()
	if len(calls) == 0 {
		return nil
	}
	var out []GeminiFunctionResponse
	for _, c := range calls[len(calls)-1].Contents {
		out = append(out, c.FunctionResponses...)
	}
	return out
}

// ChatRequests returns the model calls of the conversation received so far:
// the generate calls that do not ask for JSON (which the router does).
func (s *GeminiServer) ChatRequests() []GeminiRequest {
	var calls []GeminiRequest
	for _, r := range s.Requests() {
		if r.Action != "" && !r.JSON {
			calls = append(calls, r)
		}
	}
	return calls
}

// geminiStatus names the status of the Gemini API's error objects.
var geminiStatus = map[int]struct{ status, message string }{
	http.StatusBadRequest:          {"INVALID_ARGUMENT", "Request contains an invalid argument."},
	http.StatusUnauthorized:        {"UNAUTHENTICATED", "Request had invalid authentication credentials."},
	http.StatusForbidden:           {"PERMISSION_DENIED", "The caller does not have permission."},
	http.StatusNotFound:            {"NOT_FOUND", "Not found."},
	http.StatusTooManyRequests:     {"RESOURCE_EXHAUSTED", "Resource has been exhausted."},
	http.StatusInternalServerError: {"INTERNAL", "Internal error encountered."},
	http.StatusServiceUnavailable:  {"UNAVAILABLE", "The service is currently unavailable."},
}

// geminiAPI is the GeminiServer seen as the agenttest.API it serves.
type geminiAPI GeminiServer

func (s *geminiAPI) APIName() string { return "Gemini" }

func (s *geminiAPI) SetRecordStatus(r *GeminiRequest, status int) { r.Status = status }

// Record records r; its routes are the generate calls, POST
// /v1beta/models/M:streamGenerateContent and M:generateContent, whose bodies
// it parses.
func (s *geminiAPI) Record(r *http.Request, body []byte, parse bool) (GeminiRequest, bool, error) {
	req := GeminiRequest{
		Method: r.Method,
		Path:   r.URL.Path,
		Query:  r.URL.RawQuery,
		Header: r.Header.Clone(),
		Body:   body,
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1beta/models/")
	if !ok || r.Method != http.MethodPost {
		return req, false, nil
	}
	model, action, ok := strings.Cut(rest, ":")
	if !ok || (action != "streamGenerateContent" && action != "generateContent") {
		return req, false, nil
	}
	req.Model, req.Action = model, action
	var err error
	if parse {
		err = req.parseBody(body)
	}
	return req, true, err
}

// Respond answers a generate call with the text reply, or with the first
// queued function call when it is a conversation call.
func (s *geminiAPI) Respond(req *GeminiRequest, _ int) func(http.ResponseWriter) error {
	var call *GeminiFunctionCall
	s.mu.Lock()
	if !req.JSON && len(s.calls) > 0 {
		call = &s.calls[0]
		s.calls = s.calls[1:]
	}
	reply := s.reply
	s.mu.Unlock()
	resp := req.response(reply)
	if call != nil {
		resp = req.callResponse(*call)
	}
	if req.Action == "streamGenerateContent" {
		return func(w http.ResponseWriter) error { return writeGeminiStream(w, resp) }
	}
	return func(w http.ResponseWriter) error { return agenttest.WriteJSON(w, http.StatusOK, resp) }
}

func (s *geminiAPI) WriteError(w http.ResponseWriter, status int, msg string) error {
	return writeGeminiError(w, status, msg)
}

func (s *geminiAPI) WriteForced(w http.ResponseWriter, status int) error {
	return writeGeminiError(w, status, "")
}

// parseBody fills the parsed fields of r from a generate call's body.
func (r *GeminiRequest) parseBody(body []byte) error {
	type part struct {
		Text             *string                 `json:"text"`
		FunctionResponse *GeminiFunctionResponse `json:"functionResponse"`
	}
	var b struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []part `json:"parts"`
		} `json:"contents"`
		SystemInstruction *struct {
			Parts []part `json:"parts"`
		} `json:"systemInstruction"`
		GenerationConfig struct {
			ResponseMimeType   string         `json:"responseMimeType"`
			ResponseJSONSchema map[string]any `json:"responseJsonSchema"`
			ResponseSchema     map[string]any `json:"responseSchema"`
		} `json:"generationConfig"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return fmt.Errorf("agenttest: parse Gemini request: %w", err)
	}
	for _, c := range b.Contents {
		gc := GeminiContent{Role: c.Role}
		for _, p := range c.Parts {
			if p.Text != nil {
				gc.Texts = append(gc.Texts, *p.Text)
			} else {
				gc.Other++
			}
			if p.FunctionResponse != nil {
				gc.FunctionResponses = append(gc.FunctionResponses, *p.FunctionResponse)
			}
		}
		r.Contents = append(r.Contents, gc)
	}
	if si := b.SystemInstruction; si != nil {
		var texts []string
		for _, p := range si.Parts {
			if p.Text != nil {
				texts = append(texts, *p.Text)
			}
		}
		r.System = strings.Join(texts, "\n")
	}
	r.JSON = b.GenerationConfig.ResponseMimeType == "application/json"
	r.schema = b.GenerationConfig.ResponseJSONSchema
	if r.schema == nil {
		r.schema = b.GenerationConfig.ResponseSchema
	}
	return nil
}

// response is the stand-in's GenerateContentResponse to r, with reply's
// text when reply is set and r is a conversation call.
func (r GeminiRequest) response(reply func(GeminiRequest) string) map[string]any {
	n := len(r.UserTexts())
	text := fmt.Sprintf("MOCK REPLY (user messages seen: %d)", n)
	switch {
	case r.JSON:
		data, _ := json.Marshal(schemaValue(r.schema))
		text = string(data)
	case reply != nil:
		text = reply(r)
	}
	return map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": map[string]any{
			"promptTokenCount":     100 * n,
			"candidatesTokenCount": 9,
			"totalTokenCount":      100*n + 9,
		},
		"modelVersion": r.Model,
	}
}

// callResponse is the stand-in's GenerateContentResponse calling fc.
func (r GeminiRequest) callResponse(fc GeminiFunctionCall) map[string]any {
	return map[string]any{
		"candidates": []any{map[string]any{
			"content": map[string]any{"role": "model", "parts": []any{map[string]any{
				"functionCall": map[string]any{"name": fc.Name, "args": fc.Args},
			}}},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 5, "totalTokenCount": 105},
		"modelVersion":  r.Model,
	}
}

// schemaValue returns a value fitting a Gemini (OpenAPI-style) schema:
// 1 for numbers (so complexity_score is 1), "" for strings, false, empty
// arrays, and objects with every property.
func schemaValue(schema map[string]any) any {
	typ, _ := schema["type"].(string)
	switch strings.ToLower(typ) {
	case "integer", "number":
		return 1
	case "boolean":
		return false
	case "array":
		return []any{}
	case "string":
		if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
			return enum[0]
		}
		return ""
	}
	obj := map[string]any{}
	props, _ := schema["properties"].(map[string]any)
	for name, p := range props {
		ps, _ := p.(map[string]any)
		obj[name] = schemaValue(ps)
	}
	return obj
}

// writeGeminiStream answers a streamGenerateContent?alt=sse call with one
// data: chunk.
func writeGeminiStream(w http.ResponseWriter, resp map[string]any) error {
	data, err := json.Marshal(resp)
	if err != nil {
		return fmt.Errorf("agenttest: encode reply: %w", err)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprintf(w, "data: %s\r\n\r\n", data); err != nil {
		return fmt.Errorf("agenttest: write reply: %w", err)
	}
	return nil
}

// writeGeminiError answers with status and a Gemini API error object; msg
// empty says what Google says for that status.
func writeGeminiError(w http.ResponseWriter, status int, msg string) error {
	st, ok := geminiStatus[status]
	if !ok {
		st.status, st.message = "UNKNOWN", http.StatusText(status)
	}
	if msg == "" {
		msg = st.message
	}
	return agenttest.WriteJSON(w, status, map[string]any{
		"error": map[string]any{"code": status, "message": msg, "status": st.status},
	})
}

// geminiSettings is the $HOME/.gemini/settings.json GeminiEnv writes: the
// API-key auth type (with GOOGLE_GEMINI_BASE_URL set and no selected type
// Gemini CLI picks its gateway auth type and refuses it), no update checks,
// no usage statistics, no telemetry.
const geminiSettings = `{
  "security": { "auth": { "selectedType": "gemini-api-key" } },
  "general": { "enableAutoUpdate": false, "enableAutoUpdateNotification": false },
  "privacy": { "usageStatisticsEnabled": false },
  "telemetry": { "enabled": false }
}
`

// GeminiEnv prepares home (a t.TempDir()) as the home directory of the
// real Gemini CLI run against s: it writes home/.gemini/settings.json
// (failing the test if it cannot) and returns a complete environment with
// GEMINI_API_KEY=dummy, GOOGLE_GEMINI_BASE_URL=s.URL and home/tmp as the
// temporary directory (the CLI writes error reports there). Gemini CLI keeps
// its sessions in home/.gemini/tmp/<project>/chats/, so give every turn of
// one conversation the same home.
//
// trust sets GEMINI_CLI_TRUST_WORKSPACE=true; without it (and without a
// home/.gemini/trustedFolders.json) the CLI refuses to run headless.
//
// The environment is hermetic: nothing is inherited but PATH (node must be
// on it) and, on Windows, SystemRoot and PATHEXT.
func (s *GeminiServer) GeminiEnv(home string, trust bool) []string {
	s.tb.Helper()
	tmp := filepath.Join(home, "tmp")
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
		s.tb.Fatalf("agenttest: %v", err)
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		s.tb.Fatalf("agenttest: %v", err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(geminiSettings), 0o644); err != nil {
		s.tb.Fatalf("agenttest: %v", err)
	}
	env := []string{
		"HOME=" + home,
		"USERPROFILE=" + home,
		"TMPDIR=" + tmp,
		"TMP=" + tmp,
		"TEMP=" + tmp,
		"GEMINI_API_KEY=dummy",
		"GOOGLE_GEMINI_BASE_URL=" + s.URL,
	}
	if trust {
		env = append(env, "GEMINI_CLI_TRUST_WORKSPACE=true")
	}
	for _, name := range []string{"PATH", "SystemRoot", "PATHEXT"} {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}
