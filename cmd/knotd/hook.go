package main

import (
	"errors"
	"flag"
	"io"

	"github.com/knotd/knotd/internal/agents/claude/hook"
)

const hookUsage = `usage: knotd hook claude-pretooluse ANSWERS_FILE

knotd's own Claude Code hook: at permissions: ask, knotd has Claude Code run
it before each tool call (a PreToolUse hook given with --settings). It reads
the hook input on standard input and answers: reads pass; a call the user
approved (in ANSWERS_FILE, which knotd writes for the run) runs; one the user
denied is refused with the user's reason; a write outside the vault is
refused; anything else waits for the user's answer (defer). You do not run
it yourself.
`

// runHook is knotd hook claude-pretooluse ANSWERS_FILE.
func runHook(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("knotd hook", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	pos, help, err := parseCommand(fs, "hook", hookUsage, args, stdout)
	if help || err != nil {
		return err
	}
	err = hook.Main(pos, stdin, stdout)
	if errors.Is(err, hook.ErrUsage) {
		return usageError{"knotd hook: " + err.Error() + " (see knotd hook --help)"}
	}
	return err
}
