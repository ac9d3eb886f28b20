package pipeline

import (
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/statedir"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/knotd/knotd/internal/transcript"
)

// runLogHost is the Host of a run's transcript alone: a state folder, the
// clock and a logger. The pipeline's other needs are not met (a call
// panics on the nil Host it embeds).
type runLogHost struct {
	Host
	folder statedir.Folder
}

func (h runLogHost) Folder() statedir.Folder { return h.folder }
func (h runLogHost) Now() time.Time          { return time.Now() }
func (h runLogHost) Log() *slog.Logger       { return slog.New(slog.DiscardHandler) }

func mustDo(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkRunLog measures what a transcript costs a run: creating it,
// recording a typical run (a 4 KiB prompt and reply) and closing it (one
// fsync), against the baseline of appending the run's section to a tie-off
// (one fsync too).
func BenchmarkRunLog(b *testing.B) {
	pl := New(runLogHost{folder: statedir.Folder{Dir: b.TempDir()}})
	vr, err := os.OpenRoot(b.TempDir())
	mustDo(b, err)
	defer func() { mustDo(b, vr.Close()) }()
	w := &work{rel: "note.md", event: strand.Created, agentName: "digest", session: "0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21"}
	body := strings.Repeat("a line of the reply, as an agent writes it\n", 100)
	b.Run("tieoff-append", func(b *testing.B) {
		for b.Loop() {
			id, err := uuid.NewV7()
			mustDo(b, err)
			_, err = tieoff.Append(vr, "bench.tieoff.md", tieoff.Section{Event: strand.Created, Strand: "bench.md", Time: time.Now(), RunID: id.String(), Body: body})
			mustDo(b, err)
		}
	})
	b.Run("transcript", func(b *testing.B) {
		m := masker(agentrun.Agent{})
		for b.Loop() {
			id, err := uuid.NewV7()
			mustDo(b, err)
			tl := pl.createRunLog(id.String(), w.rel, m)
			tl.failed(w)
			tl.record(transcript.UserMessage{Prompt: body})
			tl.record(transcript.AssistantMessage{Format: transcript.FormatText, Blocks: []transcript.Block{{Type: transcript.BlockText, Fidelity: transcript.TextOnly, Text: body}}})
			tl.tieOff("note.tieoff.md", 0, false)
			tl.close()
		}
	})
}
