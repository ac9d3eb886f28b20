package prompt

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/knotd/knotd/internal/agents/kit"
)

func TestTieOffBlock_LooksOnlyAtTheNewest(t *testing.T) {
	lim := kit.Limits{TieOffSections: 3, TieOffBytes: 1 << 20}
	secs := make([]string, 1000)
	for i := range secs {
		secs[i] = fmt.Sprintf("section %d", i)
	}
	got := tieOffBlock(secs, 5, lim)
	want := "```markdown\n[… 1002 older sections omitted …]\n\nsection 997\n\n---\n\nsection 998\n\n---\n\nsection 999\n```\n"
	if got != want {
		t.Errorf("tieOffBlock(1000 sections, 5 omitted) =\n%s\nwant\n%s", got, want)
	}
	if got := tieOffBlock(nil, 0, lim); got != "(none)\n" {
		t.Errorf("tieOffBlock(nil, 0) = %q; want (none)", got)
	}
	if got := tieOffBlock(nil, 1, lim); got != "```markdown\n[… 1 older section omitted …]\n```\n" {
		t.Errorf("tieOffBlock(nil, 1) = %q", got)
	}
}

func TestChanges_TooLargeToDiff(t *testing.T) {
	got, _ := changes("a.md", bytes.Repeat([]byte("x\n"), 50), []byte("short"), kit.Limits{Diff: 10})
	if got != "(too large to diff: 100 bytes before, 5 bytes now)\n" {
		t.Errorf("changes(100 bytes, 5 bytes, Diff 10) = %q", got)
	}
}
