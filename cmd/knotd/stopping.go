package main

import (
	"context"
	"log/slog"
	"time"
)

// agentGrace is how long running agents may finish once knotd is told to
// stop (vault.Options.Grace), before they are killed.
const agentGrace = 10 * time.Second

// sayStopping logs, once ctx ends (SIGINT, SIGTERM), that knotd is
// stopping and how many agents it waits for. The returned func cancels
// that.
func sayStopping(ctx context.Context, log *slog.Logger, running func() int) (stop func() bool) {
	return context.AfterFunc(ctx, func() {
		n := running()
		if n == 0 {
			log.Info("stopping: no agent is running")
			return
		}
		log.Info("stopping: waiting for running agents to finish, then killing what remains (a second signal stops at once)",
			"running_agents", n, "up_to", agentGrace)
	})
}
