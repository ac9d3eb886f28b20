package gemini_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/agenttest/realcli"
)

// TestGemini_RealCLILongHistory: a conversation whose history outgrows the
// pipe between Gemini CLI and knotd (64 KiB on Linux) goes on turn after
// turn, each turn's reply the model's. Gemini CLI 0.61.0's session/load
// replays the history without waiting for it, and sends
// available_commands_update from a timer: with a long history that update
// comes in the middle of the replay, and the rest of the replay after it
// (even after the load's response). knotd took that update for the end
// of the replay, counted the rest as the live turn, and, at the next
// user_message_chunk, set the whole live turn aside: the turn failed with
// "empty reply" though the model had answered.
func TestGemini_RealCLILongHistory(t *testing.T) {
	t.Parallel()
	rg := newRealGemini(t, true)
	rg.keepSessions(t)
	vault := t.TempDir()
	// Each turn's note is 40 KB: from the third turn the replayed history
	// holds more than the pipe does.
	note := func(turn int) []byte {
		return []byte(fmt.Sprintf("# Plan %d\n\n%s\n", turn, strings.Repeat(fmt.Sprintf("- line of turn %d, to make the history long\n", turn), 1000)))
	}
	req := rg.FirstTurn(vault)
	req.Event.Strand.Content = note(1)
	res, _ := rg.Run(t, req)
	for turn := 2; turn <= 4; turn++ {
		rg.ageChats(t)
		req = realcli.NextTurn(req, res.Resume)
		req.Event.Strand.Content = note(turn)
		res, _ = rg.Run(t, req)
		want := fmt.Sprintf("MOCK REPLY (user messages seen: %d)", turn)
		if res.Reply != want || res.Restarted != nil {
			t.Errorf("turn %d: reply %q restarted %+v; want %q\n%s", turn, res.Reply, res.Restarted, want, acpOrder(res.Stdout))
		}
	}
}

// acpOrder lists the kinds of the ACP messages in out, in order (for a
// failure's message).
func acpOrder(out []byte) string {
	var kinds []string
	for line := range bytes.Lines(out) {
		var m struct {
			ID     *int   `json:"id"`
			Method string `json:"method"`
			Params struct {
				Update struct {
					Kind string `json:"sessionUpdate"`
				} `json:"update"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &m) != nil {
			kinds = append(kinds, "(not JSON)")
			continue
		}
		switch {
		case m.Method == "session/update":
			kinds = append(kinds, m.Params.Update.Kind)
		case m.Method != "":
			kinds = append(kinds, m.Method)
		case m.ID != nil:
			kinds = append(kinds, fmt.Sprintf("response %d", *m.ID))
		}
	}
	return strings.Join(kinds, "\n")
}
