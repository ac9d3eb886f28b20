package console

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/knotd/knotd/internal/transcript"
)

// How a live run is followed.
const (
	// quietChecks is how many polls without new output pass before the
	// console asks the daemon whether the run still goes on.
	quietChecks = 20
	// tieOffWait is how long, after run.finished, the stream waits for
	// the run's tieoff.appended line.
	tieOffWait = 5 * time.Second
)

// events streams a run's transcript as Server-Sent Events while it is
// written: each new line as an "ev" event (its id the line's seq, its data
// the event rendered as HTML), then one "end" event saying how the run
// ended, after which the stream closes. It starts after the seq the
// browser already has (Last-Event-ID, or ?after=). It ends when the run
// has ended, when the browser leaves, or when the console stops.
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if transcript.CheckRunID(id) != nil {
		http.Error(w, "not a run id", http.StatusNotFound)
		return
	}
	after, _ := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64)
	if a, err := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64); err == nil && a > after {
		after = a
	}
	f, err := os.OpenFile(transcript.Path(c.o.RunsDir, id), os.O_RDONLY|openFlags, 0)
	if err != nil {
		http.Error(w, "no transcript of run "+id, http.StatusNotFound)
		return
	}
	defer f.Close() // read only
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		http.Error(w, "no transcript of run "+id, http.StatusNotFound)
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	// A stream lives as long as the run: no deadlines (the server's
	// ReadTimeout bounds reading a request, not the stream that answers it).
	for _, set := range []func(time.Time) error{rc.SetReadDeadline, rc.SetWriteDeadline} {
		if err := set(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
			c.o.Log.Debug("console: stream", "run", id, "err", err)
		}
	}
	s := &stream{c: c, w: w, rc: rc, id: id}
	if err := s.follow(r.Context(), f, after); err != nil && r.Context().Err() == nil {
		c.o.Log.Debug("console: stream", "run", id, "err", err)
	}
}

type stream struct {
	c  *Console
	w  io.Writer
	rc *http.ResponseController
	id string
}

// sseLines turns every line break of an event stream into LF.
var sseLines = strings.NewReplacer("\r\n", "\n", "\r", "\n")

// send writes one Server-Sent Event and flushes it.
func (s *stream) send(event, id, data string) error {
	var b strings.Builder
	b.WriteString("event: " + event + "\n")
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	// Every line break an event stream knows (CR, LF, CRLF) ends a field:
	// each line of data is a data line of its own, so that text from a
	// note or an agent cannot start a field ("event:", "id:") of its own.
	for l := range strings.SplitSeq(sseLines.Replace(data), "\n") {
		b.WriteString("data: " + l + "\n")
	}
	b.WriteString("\n")
	if _, err := io.WriteString(s.w, b.String()); err != nil {
		return fmt.Errorf("console: stream: %w", err)
	}
	if err := s.rc.Flush(); err != nil {
		return fmt.Errorf("console: stream: %w", err)
	}
	return nil
}

// follow reads f's whole lines as they are written, sending those after
// seq after, until the run has ended or ctx ends.
func (s *stream) follow(ctx context.Context, f *os.File, after int64) error {
	br := bufio.NewReaderSize(f, 64<<10)
	var (
		partial  []byte
		finished string // the outcome, once run.finished was read
		deadline time.Time
		quiet    int
	)
	tick := time.NewTicker(s.c.o.Poll)
	defer tick.Stop()
	// A comment first: the browser knows the stream is open.
	if _, err := io.WriteString(s.w, ": following run "+s.id+"\n\n"); err != nil {
		return fmt.Errorf("console: stream: %w", err)
	}
	if err := s.rc.Flush(); err != nil {
		return fmt.Errorf("console: stream: %w", err)
	}
	for {
		got := false
		for {
			chunk, err := br.ReadSlice('\n')
			if len(partial)+len(chunk) > transcript.MaxLine {
				return fmt.Errorf("console: run %s has a line longer than %d bytes", s.id, transcript.MaxLine)
			}
			partial = append(partial, chunk...)
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("console: read run %s: %w", s.id, err)
			}
			if !bytes.HasSuffix(partial, []byte("\n")) {
				break // a line still being written: the rest comes later
			}
			line := partial
			partial = nil
			got = true
			ev, ok := decode(line)
			if !ok || ev.Seq <= after {
				continue
			}
			after = ev.Seq
			var html bytes.Buffer
			if err := s.c.pages.t.ExecuteTemplate(&html, "event", viewEvent(ev)); err != nil {
				return fmt.Errorf("console: render: %w", err)
			}
			if err := s.send("ev", strconv.FormatInt(ev.Seq, 10), html.String()); err != nil {
				return err
			}
			switch ev.Type {
			case transcript.RunFinished:
				finished = "finished"
				if pl, err := ev.Payload(); err == nil {
					finished = pl.(transcript.Finished).Outcome
				}
				deadline = time.Now().Add(tieOffWait)
			case transcript.TieOffAppended:
				if finished == "" {
					finished = "finished"
				}
				return s.send("end", "", finished)
			}
		}
		if got {
			quiet = 0
		} else {
			quiet++
		}
		switch {
		case finished != "" && time.Now().After(deadline):
			return s.send("end", "", finished)
		case finished == "" && quiet >= quietChecks:
			quiet = 0
			if gone, why := s.ended(ctx); gone {
				return s.send("end", "", why)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// ended reports whether a run without run.finished has stopped anyway: no
// knotd runs it (it died, or the run was never going to finish).
func (s *stream) ended(ctx context.Context) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, backendTimeout)
	defer cancel()
	st, err := s.c.o.Backend.Status(ctx)
	if err != nil {
		return false, "" // cannot tell: keep following
	}
	for _, r := range st.Running {
		if r.RunID == s.id {
			return false, ""
		}
	}
	return true, "stopped without finishing (knotd is no longer running it)"
}

// decode reads a transcript line (the reader's copy may be overwritten:
// decode copies what it keeps).
func decode(line []byte) (transcript.Event, bool) {
	evs, _, err := transcript.Read(bytes.NewReader(line))
	if err != nil || len(evs) != 1 {
		return transcript.Event{}, false
	}
	return evs[0], true
}
