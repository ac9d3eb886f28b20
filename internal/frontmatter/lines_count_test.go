package frontmatter

import (
	"fmt"
	"testing"
)

// TestParse_LineNumbersReadTheBlockOnce: the line of every key knotd
// reports (an unknown knot_* key, say) is found without reading the
// source again for each key: the cost of a block of n such keys is linear
// in n, not quadratic (250,000 of them used to cost 52 s per save).
func TestParse_LineNumbersReadTheBlockOnce(t *testing.T) {
	for _, n := range []int{1, 100, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			src := manyKeys(n, true)
			p, err := parse(src)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(p.fields.Problems); got != n {
				t.Fatalf("%d problems; want one per unknown key, %d", got, n)
			}
			for i, pr := range p.fields.Problems {
				if want := i + 3; pr.Line != want || pr.Key != fmt.Sprintf("knot_x%d", i) {
					t.Fatalf("problem %d: %s at line %d; want knot_x%d at line %d", i, pr.Key, pr.Line, i, want)
				}
			}
			if p.counted > len(src) {
				t.Errorf("numbering the lines read %d bytes of a %d-byte source; want at most the source once", p.counted, len(src))
			}
		})
	}
}
