package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/vault"
)

// knotd approve, deny and withdraw answer a question an agent asked
// (permissions: ask): through the running knotd, which continues the run
// at once, or, with none, on the vault itself, whose next start or pass
// continues it.

const answerUsage = `usage: knotd approve ID [--why TEXT] [VAULT]
       knotd deny ID [--why TEXT] [VAULT]
       knotd withdraw ID [VAULT]

Answer the question ID that an agent asked in VAULT (default: the current
folder's) under permissions: ask. ID is the 8 hex digits the question's
section of the tie-off and 'knotd status' show (the first 4 or more will
do when no other waiting question's id begins with them).

approve   let the call the question holds run, that call and no other:
          knotd continues the run
deny      refuse it: knotd continues the run and the agent is told, with
          --why's reason
withdraw  end the question with no answer to the agent; nothing runs

Through the running knotd when there is one, which continues the run at
once; with none, knotd writes the answer into the tie-off and its state,
and the run continues at knotd's next start or pass. The answer is a
section of the note's tie-off. Exit status 0 when the question was
answered, 1 when no question waits with that id (it says which ones wait)
or the answer could not be recorded, 2 for a usage error.

Flags:
`

// verdicts are the commands that answer, by their verdict.
var verdicts = map[string]question.Verdict{"approve": question.Approve, "deny": question.Deny, "withdraw": question.Withdraw}

// runAnswer is knotd approve, deny or withdraw.
func runAnswer(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("knotd "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var why string
	if cmd != "withdraw" {
		fs.StringVar(&why, "why", "", "the reason, written into the tie-off (and, for deny, told to the agent)")
	}
	pos, help, err := parseCommand(fs, cmd, answerUsage, args, stdout)
	if help || err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError{"knotd " + cmd + " needs the question's ID (knotd status lists the questions that wait)"}
	}
	id, _, err := control.QuestionID(pos[0])
	if err != nil {
		return usageError{"knotd " + cmd + ": " + err.Error()}
	}
	arg, err := vaultArg(cmd, pos[1:])
	if err != nil {
		return err
	}
	root, err := knownVault(arg, cmd)
	if err != nil {
		return err
	}
	verdict := verdicts[cmd]
	sock, known, err := vault.ControlSocket("", root)
	if err != nil {
		return err
	}
	if known {
		c := &control.Client{Path: sock}
		a, err := c.Answer(ctx, id, verdict, why, question.FromCommand)
		switch {
		case err == nil:
			return printAnswered(a, stdout)
		case errors.Is(err, control.ErrNotOurs):
			return fmt.Errorf("knotd %s: refusing the control socket: %w", cmd, err)
		case errors.Is(err, control.ErrNoQuestion):
			return fmt.Errorf("knotd %s: %w", cmd, err)
		case !errors.Is(err, control.ErrNoDaemon):
			return fmt.Errorf("knotd %s: the running knotd says: %w", cmd, err)
		}
	}
	// No daemon: answer on the vault itself, as knotd run does.
	v, err := vault.Open(root, vault.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := v.Close(); cerr != nil {
			fmt.Fprintf(stderr, "knotd %s: %v\n", cmd, cerr)
		}
	}()
	a, err := v.Control().Answer(ctx, id, verdict, why, question.FromCommand)
	if err != nil {
		return fmt.Errorf("knotd %s: %w", cmd, err)
	}
	return printAnswered(a, stdout)
}

// printAnswered says what an answer did.
func printAnswered(a control.Answered, w io.Writer) error {
	did := map[question.Verdict]string{question.Approve: "approved", question.Deny: "denied", question.Withdraw: "withdrew"}[a.Verdict]
	q := a.Question
	_, err := fmt.Fprintf(w, "%s %s (%s asked, in %s, to %s): %s\n", did, q.ID, q.Agent, q.Note, q.Summary, a.Next)
	return err
}
