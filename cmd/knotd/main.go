// Command knotd watches a vault of Markdown notes and, when a note settles
// after an edit, runs an agent CLI on it and appends the reply to the
// note's tie-off file. See `knotd --help`, the README and docs/.
//
// knotd is a program, not a library: every other package of the module
// lives under internal/ (as restic's do), so that nothing outside it can
// import them and their names may change with the program. The packages
// and what each does are listed in docs/development.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// stopDeadline bounds how long knotd takes to stop after a signal: running
// agents get their grace period (10s) and the rest a few seconds more.
// Should anything still hold knotd up then, it exits anyway, saying so;
// what was not committed is caught up on at the next start.
const stopDeadline = 30 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal asks for a clean shutdown (running agents get a
	// grace period); a second one ends knotd at once, as it would without
	// knotd catching signals. What was not committed is caught up on at
	// the next start.
	context.AfterFunc(ctx, stop)
	context.AfterFunc(ctx, func() {
		time.AfterFunc(stopDeadline, func() {
			fmt.Fprintf(os.Stderr, "knotd: still not stopped %v after the signal; exiting now (what was not committed is processed at the next start)\n", stopDeadline)
			os.Exit(exitFailed)
		})
	})
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	code := exitCode(err)
	if err != nil && !errors.Is(err, errSilent) {
		fmt.Fprintln(os.Stderr, errorLine(err))
	}
	os.Exit(code)
}

// errorLine is how knotd reports err on standard error: after "knotd: ",
// unless the message names its command already ("knotd runs show: ...").
func errorLine(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "knotd ") {
		return msg
	}
	return "knotd: " + msg
}
