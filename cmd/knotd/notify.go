package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/notify"
)

// onceFlush bounds how long knotd --once waits, after its pass, for its
// notifications to go out.
const onceFlush = 15 * time.Second

// startNotifier builds the notifier of the configuration c (nil when it
// notifies nowhere) and runs it until ctx ends or stop is called; stop
// waits for it to end. A sink that cannot be made (no desktop on
// Windows) is logged and left out; the others still notify.
func startNotifier(ctx context.Context, c config.Notify, root string, log *slog.Logger) (n *notify.Notifier, stop func()) {
	var sinks []notify.Sink
	if c.Desktop {
		if s, err := notify.Desktop(); err != nil {
			log.Warn("notify: desktop: true, but this system has no desktop notifications", "err", err)
		} else {
			sinks = append(sinks, s)
		}
	}
	if len(c.Command) > 0 {
		sinks = append(sinks, notify.Command{Argv: c.Command})
	}
	if c.URL != "" {
		u := notify.URL{URL: c.URL}
		if c.TokenEnv != "" {
			if u.Token = os.Getenv(c.TokenEnv); u.Token == "" {
				log.Warn("notify: token_env names an environment variable that is unset or empty: the notifications are posted without a token", "token_env", c.TokenEnv)
			}
		}
		sinks = append(sinks, u)
	}
	if len(sinks) == 0 {
		return nil, func() {}
	}
	n = notify.New(notify.Options{Vault: root, Sinks: sinks, Log: log})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = n.Run(ctx) // it returns nil, when ctx ends
	}()
	return n, func() {
		cancel()
		<-done
	}
}

// flushNotifier sends what the pass notified before knotd --once exits,
// waiting at most onceFlush (and not at all once ctx ended: knotd was
// interrupted).
func flushNotifier(ctx context.Context, n *notify.Notifier, log *slog.Logger) {
	if n == nil || ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, onceFlush)
	defer cancel()
	if err := n.Flush(ctx); err != nil {
		log.Warn("some notifications were not sent before knotd exits", "err", err)
	}
}
