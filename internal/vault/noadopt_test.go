package vault

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestNoAdopt_FirstContactRunsUnansweredNotes: first contact on a device
// without state (a fresh CI checkout) records a.md, which its tie-off
// answers, and runs b.md, changed since its answer, once; c.md, which
// has no answer, is adopted by default and, with NoAdopt (--no-adopt),
// runs once (Created). The next pass runs nothing either way, and the
// dry run says what the pass would do.
func TestNoAdopt_FirstContactRunsUnansweredNotes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		noAdopt    bool
		want       []string
		adopted    int
		dryRunSays []string
	}{
		{"by default", false, []string{"Modified b.md"}, 1,
			[]string{"would adopt 1 note", "==> Modified b.md"}},
		{"with NoAdopt", true, []string{"Created c.md", "Modified b.md"}, 0,
			[]string{"run 1 changed since their last answer, and run 1 whose tie-off holds no answer", "==> Modified b.md", "==> Created c.md"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.write("a.md", "# A\n")
			e.write("b.md", "# B\n")
			if got := ran(e.onceWith(e.options(), OnceOptions{All: true})); !slices.Equal(got, []string{"Created a.md", "Created b.md"}) {
				t.Fatalf("--all ran %v", got)
			}
			e.write("b.md", "# B, edited\n")
			e.write("c.md", "# C, never answered\n")

			// A device without state on a fresh checkout: no state, and
			// none of the heartbeats, which stay out of git.
			e.home = t.TempDir()
			mustDo(t, os.RemoveAll(e.abs(".knot/devices")))
			opts := e.options()
			opts.NoAdopt = tc.noAdopt
			var out bytes.Buffer
			mustDo(t, DryRun(context.Background(), e.root, opts, OnceOptions{}, &out))
			for _, s := range tc.dryRunSays {
				if !strings.Contains(out.String(), s) {
					t.Errorf("the dry run does not say %q:\n%s", s, out.String())
				}
			}
			sum := e.onceWith(opts, OnceOptions{})
			if got := ran(sum); !slices.Equal(got, tc.want) {
				t.Errorf("first contact ran %v; want %v", got, tc.want)
			}
			if sum.Adopted != tc.adopted || sum.Answered != 1 {
				t.Errorf("first contact adopted %d and found %d answered; want %d and 1", sum.Adopted, sum.Answered, tc.adopted)
			}
			if got := ran(e.onceWith(opts, OnceOptions{})); len(got) != 0 {
				t.Errorf("the next pass ran %v; want nothing", got)
			}
		})
	}
}
