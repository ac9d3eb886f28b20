package vault

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestAttack_BigNoteWithManyBadKeys: a failure section for a big note with
// many bad keys was 37.8 MB. It is a short explanation and a bounded
// excerpt, whatever the note.
func TestAttack_BigNoteWithManyBadKeys(t *testing.T) {
	e := newEnv(t)
	e.onceFresh()
	var b strings.Builder
	b.WriteString("---\n")
	for i := range 50000 {
		fmt.Fprintf(&b, "knot_bad_key_%d: %s\n", i, strings.Repeat("x", 40))
	}
	b.WriteString("---\n# A big note\n")
	e.write("big.md", b.String())
	if sum := e.onceFresh(); sum.Failed != 1 {
		t.Fatalf("summary = %+v; want the note's failure", sum)
	}
	fi, err := os.Stat(e.abs("big.tieoff.md"))
	mustDo(t, err)
	if fi.Size() > 20<<10 {
		t.Errorf("the failure section is %d bytes; want a bounded one (under 20 KiB)", fi.Size())
	}
	secs := e.sections("big.md")
	if len(secs) != 1 || !secs[0].Failed || !strings.Contains(secs[0].Body, "and 49980 more") {
		t.Errorf("sections = %+v; want one failure that says how many problems it left out", secs)
	}
}
