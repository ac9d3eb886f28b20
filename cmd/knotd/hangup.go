package main

import (
	"os"
	"os/signal"
	"sync"
)

// onHangUp calls fn, in a goroutine of its own, each time knotd gets
// SIGHUP (a closed terminal, or `kill -HUP`), until the returned stop is
// called; stop waits for a call in progress. Without it SIGHUP would end
// knotd at once, leaving what it was doing undone. Watching, SIGHUP
// reloads the configuration; a pass (--once, knotd run) stops cleanly, as
// on SIGINT.
func onHangUp(fn func()) (stop func()) {
	if len(hangUpSignals) == 0 {
		return func() {}
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, hangUpSignals...)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-c:
				fn()
			case <-done:
				return
			}
		}
	})
	return func() {
		signal.Stop(c)
		close(done)
		wg.Wait()
	}
}
