package agentrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aymanbagabas/go-udiff"
	acp "github.com/coder/acp-go-sdk"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/textbound"
)

// At permissions ask, an ACP agent's session/request_permission for a call
// that is not a read (ACP's kinds read, search and think) is held for the
// user: the call is made a question.Call (heldCall), an answer the run was
// given that is bound to it (Request.Answers, question.Answer.Applies)
// decides it, else Request.Ask writes the question down and waits for an
// answer up to the agent's ask_wait. An approval allows the call once
// (and, for an edit, the files it names may then be written through
// knotd's file system); a denial, or no answer in time, refuses it. ACP's
// answer has no room for a reason: the agent sees its own refusal text
// ("canceled by the user"), and the user's reason, or the approval that
// comes later, in the prompt of the run that continues after the answer
// (the Event Context's Answer line). The run goes on either way.

// Bounds of a held call's parts, in bytes.
const (
	maxWhy  = 1 << 10 // what the agent said before asking
	maxDiff = 8 << 10 // an edit's diff
	maxSaid = 4 << 10 // the agent's text kept while it speaks
)

// readKind reports whether an ACP tool kind only reads: such a call runs
// at every permission level.
func readKind(kind string) bool { return kind == "read" || kind == "search" || kind == "think" }

// callKind is what a tool call of ACP kind kind does, as the user is
// asked about it.
func callKind(kind string) question.Kind {
	switch kind {
	case "edit", "delete", "move":
		return question.KindEdit
	case "execute":
		return question.KindCommand
	case "fetch":
		return question.KindFetch
	}
	return question.KindOther
}

// heldCall is the call an ACP permission request asks about, as knotd
// holds it for the user. Its Input, what an answer is bound to, is what
// stays the same when the agent asks for the same call again in a later
// turn: the tool call's rawInput, else its kind, the files its locations
// name and its content (diffs and text; paths in the vault relative to
// it), never its toolCallId. why is what
// the agent said just before asking.
func (c *acpConversation) heldCall(tc acp.ToolCallUpdate, why string) question.Call {
	kind := ""
	if tc.Kind != nil {
		kind = string(*tc.Kind)
	}
	call := question.Call{Kind: callKind(kind), ToolUseID: string(tc.ToolCallId), Why: textbound.Head(strings.TrimSpace(why), maxWhy)}
	if tc.Title != nil {
		call.Tool = firstLine(*tc.Title, 200)
	}
	if call.Tool == "" {
		call.Tool = orElse(kind, "tool")
	}
	if tc.RawInput != nil {
		if b, err := json.Marshal(tc.RawInput); err == nil { // it came from JSON
			call.Input = b
		}
	}
	type diff struct {
		Path    string  `json:"path"`
		OldText *string `json:"oldText,omitempty"`
		NewText string  `json:"newText"`
	}
	var (
		paths []string
		diffs []diff
		texts []string
	)
	for _, l := range tc.Locations {
		paths = append(paths, l.Path)
	}
	for _, ct := range tc.Content {
		switch {
		case ct.Diff != nil:
			diffs = append(diffs, diff{ct.Diff.Path, ct.Diff.OldText, ct.Diff.NewText})
			paths = append(paths, ct.Diff.Path)
		case ct.Content != nil && ct.Content.Content.Text != nil:
			texts = append(texts, ct.Content.Content.Text.Text)
		}
	}
	paths = slices.DeleteFunc(paths, func(p string) bool { return p == "" })
	slices.Sort(paths)
	paths = slices.Compact(paths)
	if call.Input == nil {
		// Paths inside the vault relative to it: the same call asked on
		// another device, or with the vault moved, hashes the same.
		in := map[string]any{"kind": kind}
		if len(paths) > 0 {
			rels := make([]string, len(paths))
			for i, p := range paths {
				rels[i] = c.vaultRel(p)
			}
			in["paths"] = rels
		}
		if len(diffs) > 0 {
			rels := slices.Clone(diffs)
			for i := range rels {
				rels[i].Path = c.vaultRel(rels[i].Path)
			}
			in["diffs"] = rels
		}
		if len(texts) > 0 {
			in["text"] = texts
		}
		if tc.Title != nil {
			// The whole title: what a command without rawInput runs is
			// only there (its first line is the Tool's name).
			in["title"] = *tc.Title
		}
		call.Input, _ = json.Marshal(in) // strings only
	}
	if len(paths) > 0 {
		call.Path = c.vaultRel(paths[0])
	}
	var d strings.Builder
	for _, df := range diffs {
		old := ""
		if df.OldText != nil {
			old = *df.OldText
		}
		rel := c.vaultRel(df.Path)
		d.WriteString(udiff.Unified("a/"+rel, "b/"+rel, old, df.NewText))
	}
	call.Diff = textbound.Head(d.String(), maxDiff)
	var raw map[string]any
	if json.Unmarshal(call.Input, &raw) == nil {
		switch v := raw["command"].(type) {
		case string:
			call.Command = v
		case []any:
			var words []string
			for _, w := range v {
				if s, ok := w.(string); ok {
					words = append(words, s)
				}
			}
			call.Command = strings.Join(words, " ")
		}
		if u, ok := raw["url"].(string); ok {
			call.URL = u
		}
	}
	if call.Kind == question.KindCommand && call.Command == "" && tc.Title != nil {
		// No rawInput (Gemini CLI sends none): its title describes the
		// command, for the user to judge.
		call.Command = *tc.Title // whole: the question shows every line of it
	}
	return call
}

// orElse returns a, or b when a is empty.
func orElse(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

// vaultRel is the absolute path p relative to the vault, slash-separated,
// or p itself when it is not inside the vault.
func (c *acpConversation) vaultRel(p string) string {
	if c.cwd == "" || !filepath.IsAbs(p) {
		return filepath.ToSlash(p)
	}
	rel, err := filepath.Rel(c.cwd, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(rel)
}

// decide decides a held call: by an answer of Request.Answers bound to it,
// else by Request.Ask, waiting up to the agent's ask_wait. It returns
// whether the call may run and what the run's notes say of it; cancelled
// is set when the run was stopped while it waited (ACP then wants the
// request answered "cancelled").
func (c *acpConversation) decide(ctx context.Context, call question.Call) (allowed, cancelled bool, why string) {
	for _, a := range c.answers {
		if !a.Applies(call) {
			continue
		}
		switch a.Verdict {
		case question.Approve:
			return true, false, "approved by the user's answer " + a.ID
		case question.Deny:
			return false, false, "denied by the user's answer " + a.ID + reasonSuffix(a.Why)
		}
	}
	if c.ask == nil {
		c.heldOpen()
		return false, false, "held for the user's answer, which knotd cannot wait for in this run: refused for now"
	}
	actx, cancel := context.WithTimeout(ctx, c.askWait)
	defer cancel()
	if c.askCtx != nil {
		defer context.AfterFunc(c.askCtx, cancel)()
	}
	a, ok := c.ask(actx, call)
	if c.askCtx != nil && c.askCtx.Err() != nil {
		return false, true, "the run was stopped while the question waited for the user's answer"
	}
	switch {
	case !ok:
		c.heldOpen()
		return false, false, fmt.Sprintf("the user has not answered within ask_wait (%v): refused for now; the question stays open, and an approval reaches the agent in a later turn", c.askWait)
	case a.Verdict == question.Approve && a.Applies(call):
		return true, false, "approved by the user (" + a.ID + ")"
	case a.Verdict == question.Deny:
		return false, false, "denied by the user (" + a.ID + ")" + reasonSuffix(a.Why)
	}
	return false, false, "the question was withdrawn (" + a.ID + "): refused"
}

// heldOpen counts a call refused for now, its question open.
func (c *acpConversation) heldOpen() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unanswered++
}

// reasonSuffix is ": why", or "" when the user gave no reason.
func reasonSuffix(why string) string {
	if why == "" {
		return ""
	}
	return ": " + firstLine(why, 300)
}

// heard follows the agent's words at permissions ask, line by line of its
// output, in order (under mu): the text of its agent_message_chunk updates
// since its last request for permission, which a request takes as the
// held call's Why (by its toolCallId).
func (c *acpConversation) heard(b []byte) {
	chunk := bytes.Contains(b, []byte(`"agent_message_chunk"`))
	asks := bytes.Contains(b, []byte(`"session/request_permission"`))
	if !chunk && !asks {
		return
	}
	var m struct {
		Method string `json:"method"`
		Params struct {
			Update struct {
				SessionUpdate string `json:"sessionUpdate"`
				Content       struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"update"`
			ToolCall struct {
				ToolCallID string `json:"toolCallId"`
			} `json:"toolCall"`
		} `json:"params"`
	}
	if json.Unmarshal(b, &m) != nil {
		return
	}
	switch {
	case m.Method == "session/update" && m.Params.Update.SessionUpdate == "agent_message_chunk" && m.Params.Update.Content.Type == "text":
		c.said += m.Params.Update.Content.Text
		if len(c.said) > maxSaid {
			c.said = c.said[textbound.CutBack(c.said, len(c.said)-maxSaid):]
		}
	case m.Method == "session/request_permission":
		if c.whys == nil {
			c.whys = map[string]string{}
		}
		c.whys[m.Params.ToolCall.ToolCallID] = c.said
		c.said = ""
	}
}

// whyOf returns (and forgets) what the agent said before it asked about
// the tool call id.
func (c *acpConversation) whyOf(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	why := c.whys[id]
	delete(c.whys, id)
	return why
}
