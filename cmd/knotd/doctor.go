package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/knotd/knotd/internal/doctor"
)

const doctorUsage = `usage: knotd doctor [--agents-answer] [--json] [--config FILE] [VAULT]

Checks what knotd needs to answer VAULT (default: the current folder's vault)
and says what to fix: the configuration and the trust of the vault's config
file; each agent's program, found on PATH, and its version (with
--agents-answer, that it answers a trivial prompt: one run of each agent, which
may cost a little); the file-watch limits (inotify, or the open-file limit
kqueue counts against) against the vault's folders; the state store's health
(asked of the running knotd when there is one); and how the vault is synced
(git, Syncthing, iCloud) with what knotd asks of it, and in a git work tree
whether tie-offs merge by run id (knotd git setup). It changes nothing.

Each line is ok, warn (knotd works; something is worth doing) or fail (knotd
cannot do its job), with what to do. The exit status is 1 when a check failed,
0 otherwise.

Flags:
`

// runDoctor is knotd doctor.
func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("knotd doctor", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	answer := fs.Bool("agents-answer", false, "run each agent once on a trivial prompt")
	jsonOut := fs.Bool("json", false, "print the findings as JSON")
	cfg := fs.String("config", "", "user config `FILE`")
	pos, help, err := parseCommand(fs, "doctor", doctorUsage, args, stdout)
	if help || err != nil {
		return err
	}
	arg, err := vaultArg("doctor", pos)
	if err != nil {
		return err
	}
	root, err := vaultRoot(arg, nil)
	if err != nil {
		return err
	}
	findings := doctor.Run(ctx, doctor.Options{Root: root, ConfigFile: *cfg, Answer: *answer})
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(findings); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "knotd doctor: %s\n", root)
		for _, f := range findings {
			fmt.Fprintf(stdout, "%-5s %s: %s\n", f.Status, f.Check, f.Detail)
			if f.Fix != "" {
				fmt.Fprintf(stdout, "      fix: %s\n", f.Fix)
			}
		}
	}
	if doctor.Failed(findings) {
		return errSilent
	}
	return nil
}
