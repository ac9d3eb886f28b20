// Command instantagent is the agent knotbench runs: it answers at once, so
// that what the harness measures is knotd (or a peer tool), not an agent.
//
// It takes the time first thing in main and, when BENCH_STAMPS names a
// file, appends one line to it:
//
//	<unix nanoseconds> <strand> <event> <run id>
//
// The strand is KNOT_STRAND when knotd runs it, else the first argument
// (how the peer tools pass the changed file); event and run id are
// KNOT_EVENT and KNOT_RUN_ID, or "-". The line goes out in one write on a
// file opened with O_APPEND, so agents running at the same time never mix
// their lines. Then it reads standard input to the end (the prompt; with
// -no-stdin it does not, for tools that leave standard input open) and
// prints a one-line reply.
//
// The timestamp is taken after the Go runtime has started, so "agent
// start" includes the runtime's own start-up (well under a millisecond);
// knotbench measures that by spawning the agent directly, as a reference.
package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

func main() {
	start := time.Now()
	if err := run(start, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "instantagent:", err)
		os.Exit(1)
	}
}

func run(start time.Time, args []string) error {
	readStdin := true
	if len(args) > 0 && args[0] == "-no-stdin" {
		readStdin, args = false, args[1:]
	}
	strand := os.Getenv("KNOT_STRAND")
	if strand == "" && len(args) > 0 {
		strand = args[0]
	}
	if strand == "" {
		strand = "-"
	}
	if path := os.Getenv("BENCH_STAMPS"); path != "" {
		line := strconv.FormatInt(start.UnixNano(), 10) + " " + strand + " " +
			orDash(os.Getenv("KNOT_EVENT")) + " " + orDash(os.Getenv("KNOT_RUN_ID")) + "\n"
		if err := appendLine(path, line); err != nil {
			return err
		}
	}
	n := int64(0)
	if readStdin {
		var err error
		if n, err = io.Copy(io.Discard, os.Stdin); err != nil {
			return fmt.Errorf("read prompt: %w", err)
		}
	}
	_, err := fmt.Printf("Noted %s (%d prompt bytes).\n", strand, n)
	return err
}

func appendLine(path, line string) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("stamps: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("stamps: %w", cerr)
		}
	}()
	if _, err := f.WriteString(line); err != nil {
		return fmt.Errorf("stamps: %w", err)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
