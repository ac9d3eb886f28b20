// Command knotbench is knotd's benchmark harness. One command measures
// knotd against the performance budget of issue 6 and prints one Markdown
// table:
//
//	go run ./bench            # the full run (about 20 minutes on 2 cores)
//	go run ./bench -quick     # a CI-sized run (about 3 minutes)
//
// It builds knotd (cmd/knotd) and an instant agent (bench/instantagent)
// once, generates synthetic vaults of 1k, 10k and 100k strands under a
// temporary directory (nested directories, 1–4 KiB notes with frontmatter,
// headings, tasks and links), lets knotd adopt each, and runs the
// scenarios: reaction (settled moment to agent start), startup, once (1%
// changed), burst, history (tie-off and prompt cost against the number of
// sections), idle, conversation (knotd's prompt and the conversation the
// real Claude Code, Codex and Gemini CLIs send, turn by turn, against
// loopback stand-ins of their APIs: see internal/conversation), and peers
// (inotifywait and entr doing the same job).
// knotd runs as a separate process, configured through a generated user
// config (XDG_CONFIG_HOME points into the temporary directory, so the
// user's own config is never read). Every figure is the median of -runs
// runs; where a baseline exists (find, spawning the agent directly, a
// peer tool) it is measured in the same run and the ratio is shown.
//
// Afterwards the scenario with the worst figure (the highest figure/budget
// ratio) runs once more under the profiling variant, "knotbench
// knotd-profiled", which opens the vault with the vault package exactly as
// cmd/knotd does, with runtime/pprof on: CPU and heap profiles and a
// pprof -top summary go to the results directory; with perf installed, a
// further run with perf trace -s attached adds the system calls that took
// the most time (fsync, fdatasync, waitid: what a CPU profile misses).
//
// knotbench measures on Linux (it reads /proc); elsewhere it says so.
// Peers are installed by bench/install-peers (Debian packages); a peer that
// is not installed is skipped with a message in the table.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/knotd/knotd/bench/internal/proc"
	"github.com/knotd/knotd/bench/internal/profiled"
	"github.com/knotd/knotd/bench/internal/table"
)

// errFailed is returned when some figure missed its budget: the table
// says which.
var errFailed = errors.New("knotbench: some figures missed their budget")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, errFailed):
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "knotbench:", err)
		os.Exit(2)
	}
}

// run is knotbench: the harness, or the profiling variant of knotd when
// the first argument is knotd-profiled.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "knotd-profiled" {
		return profiled.Run(ctx, args[1:], stderr)
	}
	opts, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	if err := proc.Supported(); err != nil {
		return err
	}
	if err := proc.RaiseFileLimit(); err != nil {
		return err
	}
	e, err := newEnv(ctx, opts, stderr)
	if err != nil {
		return err
	}
	rows, notes := e.runAll(ctx)
	cerr := e.close()
	if err := table.Write(stdout, rows); err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintln(stdout)
		for _, n := range notes {
			fmt.Fprintln(stdout, n)
		}
	}
	if cerr != nil {
		return cerr
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	for _, r := range rows {
		if r.Verdict == table.VerdictFail {
			return errFailed
		}
	}
	return nil
}
