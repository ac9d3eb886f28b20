package console

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/ignore"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/transcript"
)

//go:embed assets
var assets embed.FS

// pages are the console's templates.
type pages struct{ t *template.Template }

func newPages() (*pages, error) {
	t, err := template.New("").Funcs(template.FuncMap{
		"ts":      func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
		"elapsed": func(d time.Duration) string { return d.Round(time.Second).String() },
		// plural is n and word, with an s unless n is 1: "1 run", "2 runs".
		"plural": func(n int, word string) string {
			if n == 1 {
				return "1 " + word
			}
			return fmt.Sprintf("%d %ss", n, word)
		},
		"acts": func(base, note string, paused, gone bool, off, back string) map[string]any {
			return map[string]any{"Base": base, "Note": note, "Paused": paused, "Gone": gone, "Off": off, "Back": back}
		},
		"age":   func(now, then time.Time) string { return control.Age(now.Sub(then)) },
		"bound": func(s string) string { return bound(s, maxShown) },
		"input": func(b []byte) string { return bound(indentJSON(b), maxShown) },
		// questions are the questions of note ("": every note's), as the
		// "questions" template shows them.
		"questions": func(base string, now time.Time, qs []control.Question, note string) map[string]any {
			var of []control.Question
			for _, q := range qs {
				if note == "" || q.Note == note {
					of = append(of, q)
				}
			}
			return map[string]any{"Base": base, "Now": now, "Questions": of, "Back": note}
		},
		"retryable": func(fs []control.Failure) int {
			n := 0
			for _, f := range fs {
				if f.NoRetry == "" {
					n++
				}
			}
			return n
		},
	}).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	return &pages{t: t}, nil
}

// backendTimeout bounds one call to the daemon.
const backendTimeout = 10 * time.Second

func (c *Console) routes() {
	m := http.NewServeMux()
	b := c.base
	m.HandleFunc("GET "+b+"{$}", c.overview)
	m.HandleFunc("GET "+b+"activity", c.activity)
	m.HandleFunc("GET "+b+"note", c.note)
	m.HandleFunc("GET "+b+"note/live", c.noteLive)
	m.HandleFunc("GET "+b+"run/{id}", c.run)
	m.HandleFunc("GET "+b+"run/{id}/events", c.events)
	m.HandleFunc("GET "+b+"static/{name}", c.static)
	m.HandleFunc("POST "+b+"act", c.act)
	m.HandleFunc("POST "+b+"answer", c.answer)
	c.mux = m
}

// statusView is what the daemon says, or the stored status when no daemon
// runs.
type statusView struct {
	control.Status
	// Output is the newest output of each run in progress, by run id.
	Output map[string]string
	Daemon bool   // a knotd answers the socket
	Known  bool   // a status is shown (the daemon's or the stored one)
	Err    string // why neither could be had
}

func (c *Console) status(ctx context.Context) statusView {
	ctx, cancel := context.WithTimeout(ctx, backendTimeout)
	defer cancel()
	st, err := c.o.Backend.Status(ctx)
	if err == nil {
		v := statusView{Status: st, Daemon: true, Known: true, Output: make(map[string]string)}
		for _, r := range st.Running {
			v.Output[r.RunID] = lastOutput(c.o.RunsDir, r.RunID)
		}
		return v
	}
	if !errors.Is(err, control.ErrNoDaemon) {
		return statusView{Err: "the running knotd says: " + err.Error()}
	}
	v := statusView{Err: "no knotd is running for this vault on this machine"}
	if c.o.Stored != nil {
		st, ok, err := c.o.Stored()
		switch {
		case err != nil:
			v.Err += " (and its state store cannot be read: " + err.Error() + ")"
		case ok:
			v.Status, v.Known = st, true
		}
	}
	return v
}

// pageData is what every page gets.
type pageData struct {
	Base, Title, Vault, Msg string
	Status                  statusView
	// The overview's.
	Notes     []noteView
	MoreNotes bool
	// A note's: Gone when it is deleted, Off why the rules keep it from
	// every agent.
	Note   string
	Paused bool
	Gone   bool
	Off    string
	TieOff tieOffView
	Runs   []runView
	// A run's.
	Run    runView
	Events []eventView
	Live   bool
	Last   int64
	Errs   []string
}

func (c *Console) data(r *http.Request, title string) pageData {
	return pageData{Base: c.base, Title: title, Vault: c.o.Root, Msg: r.URL.Query().Get("msg")}
}

func (c *Console) render(w http.ResponseWriter, name string, d any) {
	var buf bytes.Buffer
	if err := c.pages.t.ExecuteTemplate(&buf, name, d); err != nil {
		c.o.Log.Error("console: render a page", "page", name, "err", err)
		http.Error(w, "the page could not be made: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if _, err := w.Write(buf.Bytes()); err != nil {
		c.o.Log.Debug("console: write a page", "page", name, "err", err)
	}
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	d := c.data(r, "knotd console")
	d.Status = c.status(r.Context())
	runs, err := c.runs.list()
	if err != nil {
		d.Errs = append(d.Errs, err.Error())
	}
	d.Notes, d.MoreNotes, err = listNotes(c.o.Root, &ignore.Rules{ConfigDir: c.o.ObsidianDir, Patterns: c.o.Ignore}, runs)
	if err != nil {
		d.Errs = append(d.Errs, err.Error())
	}
	paused := make(map[string]bool)
	for _, p := range d.Status.Paused {
		paused[p.Note] = true
	}
	for i := range d.Notes {
		d.Notes[i].Paused = paused[d.Notes[i].Path]
		d.Notes[i].Off = c.off(d.Notes[i].Path)
	}
	c.render(w, "overview.html", d)
}

func (c *Console) activity(w http.ResponseWriter, r *http.Request) {
	d := c.data(r, "")
	d.Status = c.status(r.Context())
	c.render(w, "activity", d)
}

// noteArg returns the note a request names (?path=), or writes why not.
func (c *Console) noteArg(w http.ResponseWriter, r *http.Request) (string, bool) {
	note := r.URL.Query().Get("path")
	if err := strand.ValidateRel(note); err != nil || !strand.IsStrandPath(note) {
		http.Error(w, fmt.Sprintf("%q is not a note of the vault", note), http.StatusBadRequest)
		return "", false
	}
	return note, true
}

// noteData fills in what a note's page shows.
func (c *Console) noteData(r *http.Request, note string) pageData {
	d := c.data(r, note)
	d.Note = note
	d.Off = c.off(note)
	if fi, err := c.vault.Lstat(note); err != nil || !fi.Mode().IsRegular() {
		d.Gone = true // (or no regular file: nothing knotd runs)
	}
	d.Status = c.status(r.Context())
	for _, p := range d.Status.Paused {
		if p.Note == note {
			d.Paused = true
		}
	}
	var err error
	if d.TieOff, err = readTieOff(c.vault, note); err != nil {
		d.Errs = append(d.Errs, err.Error())
	}
	runs, err := c.runs.list()
	if err != nil {
		d.Errs = append(d.Errs, err.Error())
	}
	for _, s := range runs {
		if s.Strand == note {
			d.Runs = append(d.Runs, viewRun(s))
		}
	}
	return d
}

// off says why the rules keep note from every agent, "" when they do
// not.
func (c *Console) off(note string) string {
	if c.o.Off == nil {
		return ""
	}
	return c.o.Off(note)
}

func (c *Console) note(w http.ResponseWriter, r *http.Request) {
	if note, ok := c.noteArg(w, r); ok {
		c.render(w, "note.html", c.noteData(r, note))
	}
}

func (c *Console) noteLive(w http.ResponseWriter, r *http.Request) {
	if note, ok := c.noteArg(w, r); ok {
		c.render(w, "notebody", c.noteData(r, note))
	}
}

func (c *Console) run(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if transcript.CheckRunID(id) != nil {
		http.Error(w, "not a run id", http.StatusNotFound)
		return
	}
	sum, ok := transcript.Summarize(c.o.RunsDir, id)
	if !ok {
		http.Error(w, "no transcript of run "+id, http.StatusNotFound)
		return
	}
	d := c.data(r, "run "+id)
	d.Run = viewRun(sum)
	d.Note = sum.Strand
	events, err := readRun(c.o.RunsDir, id)
	if err != nil {
		d.Errs = append(d.Errs, err.Error())
	}
	for _, ev := range events {
		d.Events = append(d.Events, viewEvent(ev))
		d.Last = ev.Seq
	}
	d.Live = !sum.Finished
	c.render(w, "run.html", d)
}

// readRun reads a run's transcript, refusing one larger than
// maxTranscript.
func readRun(dir, id string) ([]transcript.Event, error) {
	fi, err := os.Lstat(transcript.Path(dir, id))
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	if fi.Size() > maxTranscript {
		return nil, fmt.Errorf("console: the transcript of run %s is %d bytes, more than a page shows (knotd runs show %s prints it)", id, fi.Size(), id)
	}
	events, warns, err := transcript.ReadRun(dir, id)
	if err != nil {
		return events, fmt.Errorf("console: %w", err)
	}
	for _, w := range warns {
		// A torn last line is one being written: the live stream sends it.
		if !w.Torn {
			return events, fmt.Errorf("console: run %s: %s", id, w)
		}
	}
	return events, nil
}

func (c *Console) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var ctype string
	switch path.Ext(name) {
	case ".js":
		ctype = "text/javascript; charset=utf-8"
	case ".css":
		ctype = "text/css; charset=utf-8"
	default:
		http.NotFound(w, r)
		return
	}
	b, err := fs.ReadFile(assets, "assets/"+name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ctype)
	if _, err := w.Write(b); err != nil {
		c.o.Log.Debug("console: write an asset", "name", name, "err", err)
	}
}

// act does what a button asks (op: run, retry, pause or resume; note: the
// note, or none for retry and resume: every failed or paused note), then
// sends the browser back to the page it came from, saying what was done.
func (c *Console) act(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
		return
	}
	op, note := r.PostForm.Get("op"), r.PostForm.Get("note")
	var notes []string
	if note != "" {
		if err := strand.ValidateRel(note); err != nil || !strand.IsStrandPath(note) {
			http.Error(w, fmt.Sprintf("%q is not a note of the vault", note), http.StatusBadRequest)
			return
		}
		notes = []string{note}
	}
	ctx, cancel := context.WithTimeout(r.Context(), backendTimeout)
	defer cancel()
	b := c.o.Backend
	var res control.Result
	var err error
	switch {
	case op == "run" && note != "":
		res, err = b.Run(ctx, notes)
	case op == "retry" && note != "":
		res, err = b.Run(ctx, notes) // one failed note: run it again
	case op == "retry":
		res, err = b.Retry(ctx, time.Time{})
	case op == "pause" && note != "":
		res, err = b.Pause(ctx, notes, "paused from the console")
	case op == "resume":
		res, err = b.Resume(ctx, notes)
	default:
		http.Error(w, "unknown action", http.StatusBadRequest)
		return
	}
	msg := said(op, res, err)
	back := c.base + "?msg=" + url.QueryEscape(msg)
	if r.PostForm.Get("back") == "note" && note != "" {
		back = c.base + "note?path=" + url.QueryEscape(note) + "&msg=" + url.QueryEscape(msg)
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// said is what a page says after an action.
func said(op string, res control.Result, err error) string {
	if errors.Is(err, control.ErrNoDaemon) {
		return "no knotd is running for this vault: start it (knotd VAULT) to " + op + " notes from here"
	}
	if err != nil {
		return op + ": the running knotd says: " + err.Error()
	}
	verb := map[string]string{"run": "queued", "retry": "queued", "pause": "paused", "resume": "resumed"}[op]
	var parts []string
	for _, n := range res.Done {
		if did := res.Outcome(n, verb); did != verb {
			parts = append(parts, n+": "+did)
		} else {
			parts = append(parts, verb+" "+n)
		}
	}
	for _, f := range res.Refused {
		parts = append(parts, "not "+verb+" "+f.Note+": "+f.Why)
	}
	if len(parts) == 0 {
		return "nothing to " + op
	}
	return strings.Join(parts, "; ")
}
