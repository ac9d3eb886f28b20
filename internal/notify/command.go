package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Command is the sink that runs a program for each event: Argv[0] with
// the rest as its arguments (never through a shell), the event as one
// JSON object on its stdin. A run that exits non-zero, or outlasts the
// send's timeout (then it is killed), fails.
type Command struct {
	Argv []string
}

// Name is "command".
func (Command) Name() string { return "command" }

// maxCommandOutput bounds what a failed command's output adds to the
// error.
const maxCommandOutput = 400

// Send runs the command with e on its stdin.
func (c Command) Send(ctx context.Context, e Event) error {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return errors.New("notify: command: no program")
	}
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("notify: command: %w", err)
	}
	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.Stdin = bytes.NewReader(append(data, '\n'))
	var out bounded
	cmd.Stdout, cmd.Stderr = &out, &out
	// A child the program left behind holding its output open does not
	// hold the send past its timeout.
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		if s := strings.TrimSpace(out.String()); s != "" {
			err = fmt.Errorf("%w; it said: %s", err, s)
		}
		return fmt.Errorf("notify: command %s: %w", c.Argv[0], err)
	}
	return nil
}

// bounded keeps the first maxCommandOutput bytes written to it.
type bounded struct{ b []byte }

func (w *bounded) Write(p []byte) (int, error) {
	if room := maxCommandOutput - len(w.b); room > 0 {
		w.b = append(w.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (w *bounded) String() string { return clean(string(w.b), maxCommandOutput) }
