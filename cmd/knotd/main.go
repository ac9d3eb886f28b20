// Command knotd watches a vault of Markdown notes and, when a note settles
// after an edit, runs an agent CLI on it and appends the reply to the
// note's tie-off file. See `knotd --help` and the README.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal asks for a clean shutdown (running agents get a
	// grace period); a second one ends knotd at once, as it would without
	// knotd catching signals. What was not committed is caught up on at
	// the next start.
	context.AfterFunc(ctx, stop)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	code := exitCode(err)
	if err != nil && !errors.Is(err, errSilent) {
		fmt.Fprintln(os.Stderr, "knotd:", err)
	}
	os.Exit(code)
}
