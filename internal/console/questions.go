package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/strand"
)

// The questions agents asked (permissions: ask) that wait for the user's
// answer: the overview lists them with what each call does, and its
// Approve and Deny buttons answer through the daemon, as knotd approve
// and knotd deny do.

// maxShown bounds what a page shows of a call's diff, command, input or
// the agent's words: the tie-off holds the question whole.
const maxShown = 8 << 10

// bound is s cut to at most n bytes, on a character's boundary, saying
// so when it is cut.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "\n… (cut here: the note's tie-off shows the question whole)"
}

// indentJSON is the JSON value b indented for reading, or b as it is when
// it is no JSON.
func indentJSON(b []byte) string {
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return string(b)
	}
	return out.String()
}

// answer answers a question (id, the whole of it; verdict: approve or
// deny; why, the reason, optional), then sends the browser back to the
// overview, or to the note's page it came from (back), saying what was
// done.
func (c *Console) answer(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
		return
	}
	id, verdict := r.PostForm.Get("id"), question.Verdict(r.PostForm.Get("verdict"))
	if !question.ValidID(id) {
		http.Error(w, fmt.Sprintf("%q is not a question's id", id), http.StatusBadRequest)
		return
	}
	if verdict != question.Approve && verdict != question.Deny {
		http.Error(w, "unknown answer: approve or deny", http.StatusBadRequest)
		return
	}
	why := strings.TrimSpace(r.PostForm.Get("why"))
	if len(why) > question.MaxWhy {
		http.Error(w, fmt.Sprintf("the reason is longer than %d bytes: shorten it", question.MaxWhy), http.StatusBadRequest)
		return
	}
	why = control.OneLine(why, question.MaxWhy)
	ctx, cancel := context.WithTimeout(r.Context(), backendTimeout)
	defer cancel()
	var msg string
	q, ok := c.o.Backend.(control.Questioner)
	if !ok {
		msg = "this knotd takes no answers from the console: use knotd " + string(verdict) + " " + id
	} else {
		a, err := q.Answer(ctx, id, verdict, why, question.FromConsole)
		msg = saidAnswer(id, verdict, a, err)
	}
	back := c.base + "?msg=" + url.QueryEscape(msg)
	if note := r.PostForm.Get("back"); note != "" && strand.ValidateRel(note) == nil && strand.IsStrandPath(note) {
		back = c.base + "note?path=" + url.QueryEscape(note) + "&msg=" + url.QueryEscape(msg)
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// saidAnswer is what the page says after an answer.
func saidAnswer(id string, verdict question.Verdict, a control.Answered, err error) string {
	switch {
	case errors.Is(err, control.ErrNoDaemon):
		return "no knotd is running for this vault: start it (knotd VAULT) to answer from here, or answer with knotd " + string(verdict) + " " + id
	case errors.Is(err, control.ErrNoQuestion):
		return err.Error()
	case err != nil:
		return string(verdict) + " " + id + ": the running knotd says: " + err.Error()
	}
	did := map[question.Verdict]string{question.Approve: "approved", question.Deny: "denied"}[a.Verdict]
	return fmt.Sprintf("%s %s (%s: %s): %s", did, a.Question.ID, a.Question.Note, a.Question.Summary, a.Next)
}
