package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"syscall"
	"time"

	"github.com/knotd/knotd/internal/question"
)

// Client reaches the daemon that serves the socket at Path. It is a
// Backend; each call is one connection.
type Client struct {
	Path string
}

var (
	_ Backend    = (*Client)(nil)
	_ Questioner = (*Client)(nil)
)

// Status asks the daemon what it is doing.
func (c *Client) Status(ctx context.Context) (Status, error) {
	resp, err := c.do(ctx, request{Op: "status"})
	if err != nil {
		return Status{}, err
	}
	if resp.Status == nil {
		return Status{}, errors.New("control: the daemon sent no status")
	}
	return *resp.Status, nil
}

// Run asks the daemon to answer the notes now.
func (c *Client) Run(ctx context.Context, notes []string) (Result, error) {
	return c.result(ctx, request{Op: "run", Notes: notes})
}

// Retry asks the daemon to run again the notes whose last run failed
// since since.
func (c *Client) Retry(ctx context.Context, since time.Time) (Result, error) {
	return c.result(ctx, request{Op: "retry", Since: since})
}

// Pause asks the daemon to pause the notes.
func (c *Client) Pause(ctx context.Context, notes []string, why string) (Result, error) {
	return c.result(ctx, request{Op: "pause", Notes: notes, Why: why})
}

// Resume asks the daemon to resume the notes (every paused one when notes
// is empty).
func (c *Client) Resume(ctx context.Context, notes []string) (Result, error) {
	return c.result(ctx, request{Op: "resume", Notes: notes})
}

// CopyState asks the daemon for a copy of its state store (see
// StateCopier).
func (c *Client) CopyState(ctx context.Context) (string, error) {
	resp, err := c.do(ctx, request{Op: "copy_state"})
	if err != nil {
		return "", err
	}
	if resp.Path == "" {
		return "", errors.New("control: the daemon sent no copy of its state")
	}
	return resp.Path, nil
}

// ReloadConfig asks the daemon to load its configuration again (see
// Reloader).
func (c *Client) ReloadConfig(ctx context.Context) ([]string, error) {
	resp, err := c.do(ctx, request{Op: "reload"})
	if err != nil {
		return nil, err
	}
	if resp.Files == nil {
		return nil, errors.New("control: the daemon did not say it reloaded")
	}
	return *resp.Files, nil
}

// Questions asks the daemon for the questions that wait.
func (c *Client) Questions(ctx context.Context) ([]Question, error) {
	resp, err := c.do(ctx, request{Op: "questions"})
	if err != nil {
		return nil, err
	}
	if resp.Questions == nil {
		return nil, errors.New("control: the daemon sent no questions")
	}
	return *resp.Questions, nil
}

// Answer asks the daemon to answer the question id (see Questioner).
func (c *Client) Answer(ctx context.Context, id string, verdict question.Verdict, why string, from question.Source) (Answered, error) {
	resp, err := c.do(ctx, request{Op: "answer", ID: id, Verdict: verdict, Why: why, From: from})
	if err != nil {
		return Answered{}, err
	}
	if resp.Answered == nil {
		return Answered{}, errors.New("control: the daemon did not say what the answer did")
	}
	return *resp.Answered, nil
}

func (c *Client) result(ctx context.Context, req request) (Result, error) {
	resp, err := c.do(ctx, req)
	if err != nil {
		return Result{}, err
	}
	if resp.Result == nil {
		return Result{}, fmt.Errorf("control: the daemon sent no result for %s", req.Op)
	}
	return *resp.Result, nil
}

// do sends req and reads the answer. It wraps ErrNoDaemon when nothing
// listens at c.Path.
// It refuses, wrapping ErrNotOurs, a socket that another user could have
// made (see checkSocket).
func (c *Client) do(ctx context.Context, req request) (response, error) {
	if err := checkSocket(c.Path); err != nil {
		return response{}, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return response{}, fmt.Errorf("%w (nothing listens on %s)", ErrNoDaemon, c.Path)
		}
		return response{}, fmt.Errorf("control: %w", err)
	}
	defer conn.Close() // read only after the write; the answer is what counts
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	b, err := json.Marshal(req)
	if err != nil {
		return response{}, fmt.Errorf("control: %w", err)
	}
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return response{}, fmt.Errorf("control: send %s: %w", req.Op, err)
	}
	line, err := bufio.NewReader(io.LimitReader(conn, maxResponse)).ReadBytes('\n')
	if err != nil {
		if ctx.Err() != nil {
			return response{}, ctx.Err()
		}
		return response{}, fmt.Errorf("control: read the answer to %s: %w", req.Op, err)
	}
	var resp response
	if err := json.Unmarshal(line, &resp); err != nil {
		return response{}, fmt.Errorf("control: read the answer to %s: %w", req.Op, err)
	}
	if resp.Error != "" {
		if resp.Code == codeNoQuestion {
			return resp, NoQuestion(resp.Error)
		}
		return resp, errors.New(resp.Error)
	}
	return resp, nil
}
