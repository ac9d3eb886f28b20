package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/knotd/knotd/internal/question"
)

// request is one command on the wire.
type request struct {
	Op    string    `json:"op"`
	Notes []string  `json:"notes,omitempty"`
	Since time.Time `json:"since,omitzero"`
	Why   string    `json:"why,omitempty"`
	// An answer's: the question's id, the verdict, where it comes from.
	ID      string           `json:"id,omitempty"`
	Verdict question.Verdict `json:"verdict,omitempty"`
	From    question.Source  `json:"from,omitempty"`
}

// response is one answer on the wire.
type response struct {
	Status *Status   `json:"status,omitempty"`
	Result *Result   `json:"result,omitempty"`
	Path   string    `json:"path,omitempty"`
	Files  *[]string `json:"files,omitempty"`
	// A Questioner's.
	Questions *[]Question `json:"questions,omitempty"`
	Answered  *Answered   `json:"answered,omitempty"`
	Error     string      `json:"error,omitempty"`
	// Code says which error Error is, when a caller tells it from the
	// others: codeNoQuestion (ErrNoQuestion).
	Code string `json:"code,omitempty"`
}

// codeNoQuestion is the Code of an error that wraps ErrNoQuestion.
const codeNoQuestion = "no_question"

// Bounds of the protocol: a request is a command and a few paths, a
// response a status of a busy vault.
const (
	maxRequest  = 1 << 20
	maxResponse = 64 << 20
	// connTimeout bounds one exchange: a client that connects and says
	// nothing does not hold a goroutine for long.
	connTimeout = time.Minute
)

// Bounds of Serve's back-off when accepting fails (as net/http's).
const (
	minAcceptDelay = 5 * time.Millisecond
	maxAcceptDelay = time.Second
)

// Serve answers the commands that reach ln with b until ctx ends; then it
// closes ln, lets the exchanges in progress end (their contexts are
// canceled), and returns nil. When accepting a connection fails (out of
// file descriptors, say) it waits, 5ms doubling up to 1s, and tries
// again, for as long as it fails: it logs once when that starts and once
// when it accepts again. An error is returned only when ln was closed
// under it.
func Serve(ctx context.Context, ln net.Listener, b Backend, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() }) // Accept returns
	defer stop()
	var delay time.Duration // of the back-off; 0 while accepting works
	failed := 0             // accepts failed in a row
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("control: accept: %w", err)
			}
			if failed++; failed == 1 {
				log.Warn("the control socket cannot accept a connection; knotd keeps trying (knotd status and the commands that steer knotd wait meanwhile)", "err", err)
			}
			delay = min(max(2*delay, minAcceptDelay), maxAcceptDelay)
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			continue
		}
		if failed > 0 {
			log.Info("the control socket accepts connections again", "failed_accepts", failed)
			failed, delay = 0, 0
		}
		wg.Go(func() {
			if err := serveConn(ctx, c, b); err != nil {
				log.Warn("a control command failed", "err", err)
			}
		})
	}
}

// serveConn answers the one request on c.
func serveConn(ctx context.Context, c net.Conn, b Backend) (err error) {
	defer func() {
		if cerr := c.Close(); err == nil && cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = cerr
		}
	}()
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	if err := c.SetDeadline(time.Now().Add(connTimeout)); err != nil {
		return err
	}
	var req request
	line, err := bufio.NewReader(io.LimitReader(c, maxRequest)).ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("read a request: %w", err)
	}
	var resp response
	if err := json.Unmarshal(line, &req); err != nil {
		resp.Error = "knotd cannot read this request: " + err.Error()
	} else {
		resp = answer(ctx, req, b)
	}
	out, err := json.Marshal(resp)
	if err != nil {
		return fmt.Errorf("encode the answer to %q: %w", req.Op, err)
	}
	_, err = c.Write(append(out, '\n'))
	return err
}

// answer asks b for what req says.
func answer(ctx context.Context, req request, b Backend) response {
	var resp response
	var res Result
	var err error
	switch req.Op {
	case "status":
		var st Status
		if st, err = b.Status(ctx); err == nil {
			resp.Status = &st
		}
		return withError(resp, err)
	case "run":
		res, err = b.Run(ctx, req.Notes)
	case "retry":
		res, err = b.Retry(ctx, req.Since)
	case "pause":
		res, err = b.Pause(ctx, req.Notes, req.Why)
	case "resume":
		res, err = b.Resume(ctx, req.Notes)
	case "copy_state":
		c, ok := b.(StateCopier)
		if !ok {
			return response{Error: "this knotd does not copy its state"}
		}
		resp.Path, err = c.CopyState(ctx)
		return withError(resp, err)
	case "reload":
		r, ok := b.(Reloader)
		if !ok {
			return response{Error: "this knotd does not reload on request"}
		}
		files, err := r.ReloadConfig(ctx)
		if err == nil {
			resp.Files = &files
		}
		return withError(resp, err)
	case "questions":
		q, ok := b.(Questioner)
		if !ok {
			return response{Error: "this knotd does not take questions"}
		}
		qs, err := q.Questions(ctx)
		if err == nil {
			resp.Questions = &qs
		}
		return withError(resp, err)
	case "answer":
		q, ok := b.(Questioner)
		if !ok {
			return response{Error: "this knotd does not take answers"}
		}
		// The socket is the machine's: an answer through it is the
		// command's or the console's, never the note's.
		if req.From != question.FromCommand && req.From != question.FromConsole {
			return response{Error: fmt.Sprintf("an answer through the control socket comes from the command or the console, not %q", req.From)}
		}
		a, err := q.Answer(ctx, req.ID, req.Verdict, req.Why, req.From)
		if err == nil {
			resp.Answered = &a
		}
		return withError(resp, err)
	default:
		return response{Error: fmt.Sprintf("knotd does not know the command %q (a newer knotd's?)", req.Op)}
	}
	if err == nil {
		resp.Result = &res
	}
	return withError(resp, err)
}

func withError(resp response, err error) response {
	if err != nil {
		resp.Error = err.Error()
		if errors.Is(err, ErrNoQuestion) {
			resp.Code = codeNoQuestion
		}
	}
	return resp
}
