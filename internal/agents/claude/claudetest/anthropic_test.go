package claudetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
)

// mustDo sends a request with body to the server and returns the answer's
// status, Content-Type and body.
func mustDo(t *testing.T, s *Server, method, path, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatalf("NewRequest(%s %s): %v", method, path, err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read answer: %v", method, path, err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(data)
}

// messagesBody is a Messages API request body with the given user and
// assistant turns (alternating, user first).
func messagesBody(stream bool, turns ...string) string {
	var msgs []string
	for i, text := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		q, _ := json.Marshal(text)
		msgs = append(msgs, fmt.Sprintf(`{"role":%q,"content":[{"type":"text","text":%s}]}`, role, q))
	}
	return fmt.Sprintf(`{"model":"claude-test","stream":%t,"max_tokens":100,"messages":[%s]}`,
		stream, strings.Join(msgs, ","))
}

func TestAnthropic_StreamsReply(t *testing.T) {
	s := NewAnthropic(t)
	status, ctype, body := mustDo(t, s, http.MethodPost, "/v1/messages?beta=true",
		messagesBody(true, "one", "reply", "two"))
	if status != http.StatusOK || ctype != "text/event-stream" {
		t.Fatalf("POST /v1/messages (stream) = %d %q; want 200 text/event-stream", status, ctype)
	}
	events := agenttest.ParseSSE(t, body)
	var names []string
	var text strings.Builder
	for _, ev := range events {
		names = append(names, ev.Name)
		if ev.Data["type"] != ev.Name {
			t.Errorf("event %s has data type %v; want %s", ev.Name, ev.Data["type"], ev.Name)
		}
		if delta, ok := ev.Data["delta"].(map[string]any); ok && ev.Name == "content_block_delta" {
			if delta["type"] != "text_delta" {
				t.Errorf("content_block_delta type = %v; want text_delta", delta["type"])
			}
			text.WriteString(delta["text"].(string))
		}
		if ev.Name == "message_delta" {
			if got := ev.Data["delta"].(map[string]any)["stop_reason"]; got != "end_turn" {
				t.Errorf("message_delta stop_reason = %v; want end_turn", got)
			}
		}
		if ev.Name == "message_start" {
			msg := ev.Data["message"].(map[string]any)
			if msg["role"] != "assistant" || msg["model"] != "claude-test" {
				t.Errorf("message_start message = %v; want role assistant, model claude-test", msg)
			}
		}
	}
	want := []string{"message_start", "content_block_start", "content_block_delta",
		"content_block_stop", "message_delta", "message_stop"}
	if !slices.Equal(names, want) {
		t.Errorf("events = %q; want %q", names, want)
	}
	if got := text.String(); got != "MOCK REPLY (user messages seen: 2)" {
		t.Errorf("streamed text = %q; want %q", got, "MOCK REPLY (user messages seen: 2)")
	}

	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("Requests() has %d requests; want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/v1/messages" || r.Query != "beta=true" || r.Status != 200 ||
		r.Model != "claude-test" || !r.Stream {
		t.Errorf("recorded %s %s ? %s status %d model %q stream %t; want POST /v1/messages ? beta=true status 200 model claude-test stream true",
			r.Method, r.Path, r.Query, r.Status, r.Model, r.Stream)
	}
	if got, want := r.UserPrompts(), []string{"one", "two"}; !slices.Equal(got, want) {
		t.Errorf("UserPrompts() = %q; want %q", got, want)
	}
}

func TestAnthropic_Answers(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantType                 string
		wantBody                 string // JSON, compared after decoding
	}{
		{"message", "POST", "/v1/messages", messagesBody(false, "hi"), 200, "application/json",
			`{"id":"msg_000000000000000000000001","type":"message","role":"assistant","model":"claude-test",
			"content":[{"type":"text","text":"MOCK REPLY (user messages seen: 1)"}],
			"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":8}}`},
		{"count tokens", "POST", "/v1/messages/count_tokens?beta=true", messagesBody(false, "hi"), 200,
			"application/json", `{"input_tokens":10}`},
		{"get", "GET", "/v1/models", "", 200, "application/json", `{}`},
		{"head", "HEAD", "/api/hello", "", 200, "application/json", ``},
		{"unknown path", "POST", "/v1/complete", `{}`, 404, "application/json",
			`{"type":"error","error":{"type":"not_found_error","message":"agenttest: no route for POST /v1/complete"}}`},
		{"unknown method", "PUT", "/v1/messages", `{}`, 404, "application/json",
			`{"type":"error","error":{"type":"not_found_error","message":"agenttest: no route for PUT /v1/messages"}}`},
		{"bad json", "POST", "/v1/messages", `{"messages": 3}`, 400, "application/json", ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewAnthropic(t)
			status, ctype, body := mustDo(t, s, tt.method, tt.path, tt.body)
			if status != tt.wantStatus || ctype != tt.wantType {
				t.Errorf("%s %s = %d %q; want %d %q", tt.method, tt.path, status, ctype, tt.wantStatus, tt.wantType)
			}
			if tt.wantBody != "" {
				var got, want any
				if err := json.Unmarshal([]byte(body), &got); err != nil {
					t.Fatalf("%s %s: answer %q: %v", tt.method, tt.path, body, err)
				}
				if err := json.Unmarshal([]byte(tt.wantBody), &want); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s %s answered %s; want %s", tt.method, tt.path, body, tt.wantBody)
				}
			}
			if reqs := s.Requests(); len(reqs) != 1 || reqs[0].Status != tt.wantStatus {
				t.Errorf("Requests() = %+v; want one request with status %d", reqs, tt.wantStatus)
			}
		})
	}
}

func TestAnthropic_SetReply(t *testing.T) {
	s := NewAnthropic(t)
	s.SetReply(func(r Request) string { return "echo: " + strings.Join(r.UserPrompts(), "|") })
	_, _, body := mustDo(t, s, "POST", "/v1/messages", messagesBody(false, "a", "b", "c"))
	if !strings.Contains(body, `"text":"echo: a|c"`) {
		t.Errorf("with SetReply, answer = %s; want text %q", body, "echo: a|c")
	}
	s.SetReply(nil)
	_, _, body = mustDo(t, s, "POST", "/v1/messages", messagesBody(false, "a"))
	if !strings.Contains(body, `"text":"MOCK REPLY (user messages seen: 1)"`) {
		t.Errorf("after SetReply(nil), answer = %s; want the default reply", body)
	}
}

func TestAnthropic_SetStatus(t *testing.T) {
	s := NewAnthropic(t)
	s.SetStatus(http.StatusUnauthorized)
	for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens", "/anything"} {
		status, _, body := mustDo(t, s, "POST", path, messagesBody(true, "hi"))
		if status != 401 || !strings.Contains(body, `"type":"authentication_error"`) {
			t.Errorf("after SetStatus(401), POST %s = %d %s; want 401 authentication_error", path, status, body)
		}
	}
	if status, _, _ := mustDo(t, s, "GET", "/", ""); status != 401 {
		t.Errorf("after SetStatus(401), GET / = %d; want 401", status)
	}
	s.SetStatus(529)
	if status, _, body := mustDo(t, s, "POST", "/v1/messages", messagesBody(false, "hi")); status != 529 ||
		!strings.Contains(body, "overloaded_error") {
		t.Errorf("after SetStatus(529), POST = %d %s; want 529 overloaded_error", status, body)
	}
	s.SetStatus(0)
	if status, _, _ := mustDo(t, s, "POST", "/v1/messages", messagesBody(false, "hi")); status != 200 {
		t.Errorf("after SetStatus(0), POST = %d; want 200", status)
	}
	if n := len(s.MessageRequests()); n != 3 {
		t.Errorf("MessageRequests() has %d requests; want 3 (errors are recorded too)", n)
	}
}

func TestAnthropic_RecordsConcurrentRequests(t *testing.T) {
	s := NewAnthropic(t)
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			stream := i%2 == 0
			resp, err := http.Post(s.URL+"/v1/messages", "application/json",
				strings.NewReader(messagesBody(stream, fmt.Sprint(i))))
			if err != nil {
				t.Errorf("POST %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				t.Errorf("POST %d: read answer: %v", i, err)
			}
		})
		// Reading while requests arrive is part of the contract.
		_ = s.Requests()
	}
	wg.Wait()
	var seen []string
	for _, r := range s.MessageRequests() {
		seen = append(seen, r.UserPrompts()...)
	}
	slices.Sort(seen)
	var want []string
	for i := range n {
		want = append(want, fmt.Sprint(i))
	}
	slices.Sort(want)
	if !slices.Equal(seen, want) {
		t.Errorf("recorded prompts = %q; want %q", seen, want)
	}
}

func TestAnthropic_Close(t *testing.T) {
	s := NewAnthropic(t)
	mustDo(t, s, "GET", "/", "")
	s.Close()
	s.Close() // again, and once more from t.Cleanup
	if resp, err := http.Get(s.URL + "/"); err == nil {
		resp.Body.Close()
		t.Fatalf("GET after Close answered %s; want a connection error", resp.Status)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("after Close, Requests() has %d requests; want 1", n)
	}
}
