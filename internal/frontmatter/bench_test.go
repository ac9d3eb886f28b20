package frontmatter

import (
	"bytes"
	"fmt"
	"testing"
)

// note returns a strand of about size bytes: a typical block, with or
// without a session, and a Markdown body.
func note(size int, withSession bool) []byte {
	var b bytes.Buffer
	b.WriteString("---\ntitle: Weekly review\ntags: [review, work]\naliases:\n  - weekly\n")
	if withSession {
		b.WriteString("knot_session: " + testID + "\n")
	}
	b.WriteString("knot_mode: append\n---\n# Weekly review\n\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "- [ ] item %d: follow up on the notes from Monday, see [[plan]]\n", i)
	}
	return b.Bytes()
}

// BenchmarkSetSession measures SetSession on a 1 KiB and a 1 MiB strand.
// When the strand already holds the session it reads only the block, so
// its cost does not depend on the body; without one it copies the strand,
// so its cost grows with the body only by that copy.
func BenchmarkSetSession(b *testing.B) {
	for _, withSession := range []bool{true, false} {
		for _, size := range []int{1 << 10, 1 << 20} {
			name := fmt.Sprintf("existing/%dKiB", size>>10)
			if !withSession {
				name = fmt.Sprintf("new/%dKiB", size>>10)
			}
			src := note(size, withSession)
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(src)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := SetSession(src, testID); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkCopy is the baseline for SetSession on a strand without a
// session: allocating and filling a strand-sized buffer, the least any
// edit that returns new bytes must do.
func BenchmarkCopy(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20} {
		src := note(size, false)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				out := make([]byte, 0, len(src)+64)
				sink = append(out, src...)
			}
		})
	}
}

var sink []byte

// BenchmarkParse measures Parse, which reads the block and not the body.
func BenchmarkParse(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20} {
		src := note(size, true)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// manyKeys returns a strand whose block holds n keys: unknown knot_* keys
// (knot_x0: 1, ...) if unknown, else ordinary keys (x0: 1, ...).
func manyKeys(n int, unknown bool) []byte {
	var b bytes.Buffer
	b.WriteString("---\ntitle: Many keys\n")
	prefix := "x"
	if unknown {
		prefix = "knot_x"
	}
	for i := range n {
		fmt.Fprintf(&b, "%s%d: %d\n", prefix, i, i)
	}
	b.WriteString("---\n# Many keys\n")
	return b.Bytes()
}

// BenchmarkManyKeys measures what a save costs knotd (Parse, and
// WithoutOwnKeys, which compares versions) on a block of 10,000 and
// 100,000 keys, ordinary or unknown knot_* keys: both grow linearly, and
// an unknown knot_* key (a problem knotd reports, with its line) costs
// about what an ordinary key costs.
func BenchmarkManyKeys(b *testing.B) {
	for _, unknown := range []bool{false, true} {
		for _, n := range []int{10_000, 100_000} {
			src := manyKeys(n, unknown)
			kind := "ordinary"
			if unknown {
				kind = "knot_"
			}
			b.Run(fmt.Sprintf("%s/%dk", kind, n/1000), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Parse(src); err != nil {
						b.Fatal(err)
					}
					sink = WithoutOwnKeys(src)
				}
			})
		}
	}
}
