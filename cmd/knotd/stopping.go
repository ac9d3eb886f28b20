package main

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// agentGrace is how long running agents may finish once knotd is told to
// stop (vault.Options.Grace), before they are killed.
const agentGrace = 10 * time.Second

// runCounter is a slog.Handler in front of knotd's own that counts the
// runs in flight from the vault's "run started" and "run finished" log
// records (by their run id), so that knotd can say, when it is told to
// stop, how many agents it waits for. It counts whatever the log level.
type runCounter struct {
	slog.Handler
	state *runState
}

type runState struct {
	mu      sync.Mutex
	running map[string]bool
}

func newRunCounter(h slog.Handler) *runCounter {
	return &runCounter{Handler: h, state: &runState{running: map[string]bool{}}}
}

// Enabled lets "run started" and "run finished" (Info) through to Handle
// even when the log shows warnings and errors only.
func (c *runCounter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || c.Handler.Enabled(ctx, l)
}

func (c *runCounter) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "run started" || r.Message == "run finished" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key != "run" {
				return true
			}
			c.state.mu.Lock()
			if r.Message == "run started" {
				c.state.running[a.Value.String()] = true
			} else {
				delete(c.state.running, a.Value.String())
			}
			c.state.mu.Unlock()
			return false
		})
	}
	if !c.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return c.Handler.Handle(ctx, r)
}

func (c *runCounter) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &runCounter{Handler: c.Handler.WithAttrs(attrs), state: c.state}
}

func (c *runCounter) WithGroup(name string) slog.Handler {
	return &runCounter{Handler: c.Handler.WithGroup(name), state: c.state}
}

// Running returns how many runs are in flight.
func (c *runCounter) Running() int {
	c.state.mu.Lock()
	defer c.state.mu.Unlock()
	return len(c.state.running)
}

// sayStopping logs, once ctx ends (SIGINT, SIGTERM), that knotd is
// stopping and how many agents it waits for. The returned func cancels
// that.
func sayStopping(ctx context.Context, log *slog.Logger, runs *runCounter) (stop func() bool) {
	return context.AfterFunc(ctx, func() {
		n := runs.Running()
		if n == 0 {
			log.Info("stopping: no agent is running")
			return
		}
		log.Info("stopping: waiting for running agents to finish, then killing what remains (a second signal stops at once)",
			"running_agents", n, "up_to", agentGrace)
	})
}
