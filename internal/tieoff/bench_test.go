package tieoff

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/strand"
)

const bigSections = 100_000

// BenchmarkTieOff measures the costs that must not grow with the history,
// on an empty tie-off and ones of 10, 1,000 (Append only) and 100,000
// sections (built once, in b.TempDir):
//
//   - Append: the whole Append, fsync included. Between iterations the
//     file is truncated back (timer stopped), so every iteration appends
//     to the same state.
//   - Joint: Append's work without the write and fsync (read the end,
//     choose the separator, format the section).
//   - Tail: the newest 5 sections within 16 KiB; reports bytes read.
//   - HasRun: find the newest run.
func BenchmarkTieOff(b *testing.B) {
	root, dir := testVault(b)
	const big, small, mid, empty = "big.tieoff.md", "small.tieoff.md", "mid.tieoff.md", "empty.tieoff.md"
	writeTieOff(b, filepath.Join(dir, big), bigSections, shortBody)
	writeTieOff(b, filepath.Join(dir, small), 10, shortBody)
	writeTieOff(b, filepath.Join(dir, mid), 1000, shortBody)
	if err := os.WriteFile(filepath.Join(dir, empty), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	reply := mkSection(bigSections, strand.Modified, "notes/big.md",
		strings.Repeat("A reply of a usual size, with a few paragraphs.\n\n", 20))

	for _, c := range []struct{ name, file string }{{"empty", empty}, {"10", small}, {"1k", mid}, {"100k", big}} {
		path := filepath.Join(dir, c.file)
		size := fileSize(b, path)
		b.Run("Append/"+c.name, func(b *testing.B) {
			for range b.N {
				if _, err := Append(root, c.file, reply); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := os.Truncate(path, size); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
		b.Run("Joint/"+c.name, func(b *testing.B) {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			for b.Loop() {
				if _, err := joint(f, size); err != nil {
					b.Fatal(err)
				}
				if _, err := Format(reply); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, c := range []struct{ name, file string }{{"10", small}, {"100k", big}} {
		b.Run("Tail/"+c.name, func(b *testing.B) {
			var read int64
			for b.Loop() {
				w, err := Tail(root, c.file, 5, 16<<10)
				if err != nil || len(w.Sections) != 5 {
					b.Fatalf("Tail = %d sections, %v", len(w.Sections), err)
				}
				read = w.BytesRead
			}
			b.ReportMetric(float64(read), "bytes-read/op")
			b.ReportMetric(float64(fileSize(b, filepath.Join(dir, c.file))), "file-bytes")
		})
		b.Run("HasRun/"+c.name, func(b *testing.B) {
			run := "run-9"
			if c.file == big {
				run = "run-99999"
			}
			for b.Loop() {
				if ok, err := HasRun(root, c.file, run, 0); !ok || err != nil {
					b.Fatalf("HasRun = %v, %v", ok, err)
				}
			}
		})
	}
}

// BenchmarkParse measures Parse throughput on a tie-off of 1,000 sections
// with replies that have some structure.
func BenchmarkParse(b *testing.B) {
	var doc []byte
	for i := range 1000 {
		doc = appendBytes(b, doc, mkSection(i, strand.Modified, "n.md",
			"# Review\n\nSome *text* with `code` and a [link](x).\n\n- one\n- two\n\n```go\nfunc f() {}\n```\n\n> quote\n"))
	}
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if secs, probs := Parse(doc); len(secs) != 1000 || len(probs) > 0 {
			b.Fatalf("Parse = %d sections, %d problems", len(secs), len(probs))
		}
	}
}

// BenchmarkFormat measures Format (neutralisation included) on a reply of
// about 4 KiB.
func BenchmarkFormat(b *testing.B) {
	s := mkSection(0, strand.Modified, "n.md", strings.Repeat("A paragraph of text.\n\n- item\n\n```\ncode\n```\n\n", 100))
	b.SetBytes(int64(len(s.Body)))
	for b.Loop() {
		if _, err := Format(s); err != nil {
			b.Fatal(err)
		}
	}
}

func fileSize(b *testing.B, path string) int64 {
	b.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}
