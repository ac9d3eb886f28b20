package tieoff

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/strand"
)

// writeTieOff writes n sections (run ids run-<i>, bodies from body(i)) the
// way Append would, without an fsync per section, and returns the offset
// of every section.
func writeTieOff(t testing.TB, path string, n int, body func(i int) string) []int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	offs := make([]int64, 0, n)
	var off int64
	for i := range n {
		if i > 0 {
			w.WriteString(separator)
			off += int64(len(separator))
		}
		s := mkSection(i, strand.Modified, "notes/big.md", body(i))
		s.RunID = fmt.Sprintf("run-%d", i)
		b := mustFormat(t, s)
		w.Write(b)
		offs = append(offs, off)
		off += int64(len(b))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return offs
}

func shortBody(i int) string { return fmt.Sprintf("Reply %d.\n\n- a point\n- another\n", i) }

func TestTail(t *testing.T) {
	root, dir := testVault(t)
	const name = "n.tieoff.md"
	path := filepath.Join(dir, name)
	offs := writeTieOff(t, path, 10, shortBody)
	size := int64(len(mustReadFile(t, path)))
	all := mustRead(t, root, name)
	secLen := offs[9+0] - offs[8] // one section plus its separator

	tests := []struct {
		name      string
		n, budget int
		first     int // index of the first section returned; 10 for none
	}{
		{"newest three", 3, 0, 7},
		{"all by count", 0, 0, 0},
		{"more than there are", 50, 0, 0},
		{"budget for two", 10, int(size - offs[8]), 8},
		{"budget one byte short of two", 10, int(size-offs[8]) - 1, 9},
		{"budget for two and a half", 10, int(size - offs[8] + secLen/2), 8},
		{"count tighter than budget", 1, int(size), 9},
		{"newest does not fit", 5, 10, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Tail(root, name, tt.n, tt.budget)
			if err != nil {
				t.Fatal(err)
			}
			want := all[tt.first:]
			if len(w.Sections) != len(want) {
				t.Fatalf("Tail(%d, %d) = %d sections; want %d", tt.n, tt.budget, len(w.Sections), len(want))
			}
			wantStart := size
			if tt.first < 10 {
				wantStart = offs[tt.first]
			}
			if w.Start != wantStart || w.Size != size {
				t.Errorf("Start, Size = %d, %d; want %d, %d", w.Start, w.Size, wantStart, size)
			}
			for i := range want {
				if err := sameSection(w.Sections[i], want[i]); err != nil {
					t.Errorf("section %d: %v", i, err)
				}
				if w.Sections[i].Offset != want[i].Offset {
					t.Errorf("section %d Offset = %d; want %d", i, w.Sections[i].Offset, want[i].Offset)
				}
			}
			if len(w.Problems) > 0 {
				t.Errorf("problems: %s", problemsString(w.Problems))
			}
			if tt.budget > 0 && int64(len(w.Text)) > int64(tt.budget) {
				t.Errorf("len(Text) = %d > budget %d", len(w.Text), tt.budget)
			}
			if tt.budget > 0 && w.BytesRead > int64(tt.budget)+1 {
				t.Errorf("BytesRead = %d; want at most budget+1 = %d", w.BytesRead, tt.budget+1)
			}
			if got := string(mustReadFile(t, path)[w.Start:]); string(w.Text) != got {
				t.Errorf("Text is not the file from Start")
			}
		})
	}
}

// TestTail_BoundedOnBigFile: the bytes Tail reads depend on the budget,
// not on the history.
func TestTail_BoundedOnBigFile(t *testing.T) {
	root, dir := testVault(t)
	const name = "big.tieoff.md"
	path := filepath.Join(dir, name)
	writeTieOff(t, path, 20000, shortBody)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Tail(root, name, 3, 8192)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Sections) != 3 || w.Sections[2].RunID != "run-19999" {
		t.Fatalf("Tail = %d sections, last %q", len(w.Sections), w.Sections[len(w.Sections)-1].RunID)
	}
	if w.BytesRead > 8193 {
		t.Errorf("Tail(3, 8192) read %d bytes of %d", w.BytesRead, fi.Size())
	}
	w, err = Tail(root, name, 0, 8192)
	if err != nil {
		t.Fatal(err)
	}
	if w.BytesRead != 8193 || len(w.Text) > 8192 || len(w.Sections) == 0 {
		t.Errorf("Tail(0, 8192) read %d bytes, returned %d bytes in %d sections", w.BytesRead, len(w.Text), len(w.Sections))
	}
	w, err = Tail(root, name, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Sections) != 2 || w.BytesRead > 4096 {
		t.Errorf("Tail(2, no budget) = %d sections after reading %d bytes; want 2 within one 4 KiB chunk", len(w.Sections), w.BytesRead)
	}
}

func TestTail_EdgeFiles(t *testing.T) {
	root, dir := testVault(t)
	if _, err := Tail(root, "missing.md", 1, 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Tail(missing) = %v; want ErrNotExist", err)
	}
	empty := filepath.Join(dir, "empty.md")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if w, err := Tail(root, "empty.md", 3, 100); err != nil || len(w.Sections) != 0 || w.Start != 0 {
		t.Errorf("Tail(empty) = %+v, %v", w, err)
	}
	notes := filepath.Join(dir, "notes.md")
	if err := os.WriteFile(notes, []byte("no sections here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if w, err := Tail(root, "notes.md", 3, 100); err != nil || len(w.Sections) != 0 || w.Start != w.Size {
		t.Errorf("Tail(no sections) = %+v, %v", w, err)
	}
	// A section that starts at the very beginning of the budget window.
	one := filepath.Join(dir, "one.md")
	writeTieOff(t, one, 1, shortBody)
	size := int(len(mustReadFile(t, one)))
	if w, err := Tail(root, "one.md", 3, size); err != nil || len(w.Sections) != 1 || w.Start != 0 {
		t.Errorf("Tail(one section, exact budget) = %d sections from %d, %v", len(w.Sections), w.Start, err)
	}
}

func TestHasRun(t *testing.T) {
	root, dir := testVault(t)
	const name = "n.tieoff.md"
	path := filepath.Join(dir, name)
	offs := writeTieOff(t, path, 50, func(i int) string {
		if i == 10 {
			// A very long line, and a reply quoting another run's marker.
			return strings.Repeat("x", 3*maxLine) + "\n<!-- knot:run run-77 bytes=3 -->\n"
		}
		return shortBody(i)
	})
	size := int64(len(mustReadFile(t, path)))
	tests := []struct {
		name string
		run  string
		from int64
		want bool
	}{
		{"newest", "run-49", 0, true},
		{"oldest", "run-0", 0, true},
		{"before a long line", "run-9", 0, true},
		{"absent", "run-50", 0, false},
		{"quoted in a reply only", "run-77", 0, false},
		{"from its own offset", "run-30", offs[30], true},
		{"from after it", "run-30", offs[31], false},
		{"from beyond the end searches all", "run-30", size + 100, true},
	}
	for _, tt := range tests {
		got, err := HasRun(root, name, tt.run, tt.from)
		if err != nil || got != tt.want {
			t.Errorf("%s: HasRun(%q, %d) = %v, %v; want %v", tt.name, tt.run, tt.from, got, err, tt.want)
		}
	}
	if got, err := HasRun(root, "missing.md", "run-1", 0); got || err != nil {
		t.Errorf("HasRun(missing file) = %v, %v; want false, nil", got, err)
	}
	if _, err := HasRun(root, name, "bad id", 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("HasRun(bad id) = %v; want ErrInvalid", err)
	}
}

// TestHasRun_Torn: a section cut short by a crash is not reported as
// written, but as torn; a CRLF copy of a whole section is not torn.
func TestHasRun_Torn(t *testing.T) {
	root, dir := testVault(t)
	const name = "n.tieoff.md"
	path := filepath.Join(dir, name)
	writeTieOff(t, path, 3, shortBody)
	doc := mustReadFile(t, path)
	for cut := 1; cut < 40; cut += 7 {
		if err := os.WriteFile(path, doc[:len(doc)-cut], 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := HasRun(root, name, "run-2", 0)
		if got || !errors.Is(err, ErrTorn) {
			t.Errorf("HasRun(cut %d bytes) = %v, %v; want false, ErrTorn", cut, got, err)
		}
		if got, err := HasRun(root, name, "run-1", 0); !got || err != nil {
			t.Errorf("HasRun(earlier run, cut %d) = %v, %v; want true", cut, got, err)
		}
	}
	crlf := bytes.ReplaceAll(doc, []byte("\n"), []byte("\r\n"))
	if err := os.WriteFile(path, crlf, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := HasRun(root, name, "run-2", 0); !got || err != nil {
		t.Errorf("HasRun(CRLF) = %v, %v; want true", got, err)
	}
	// Whole but without the final newline (an editor stripped it).
	if err := os.WriteFile(path, doc[:len(doc)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := HasRun(root, name, "run-2", 0); !errors.Is(err, ErrTorn) {
		t.Errorf("HasRun(final newline stripped) = %v; want ErrTorn (the length no longer matches)", err)
	}
}

// TestScanLinesBack checks the backward line scanner against a plain
// split, around chunk boundaries and lines longer than maxLine: every line
// it reports is the true line at that offset, in order from the end, and
// no line of maxLine bytes or less is missed.
func TestScanLinesBack(t *testing.T) {
	long := strings.Repeat("L", maxLine+10)
	tests := map[string][]string{
		"short":                     {"a", "bb", "", "ccc"},
		"no final newline":          {"a", "b"},
		"long line in the middle":   {"before", long, "after"},
		"long line first":           {long, "x"},
		"long line last":            {"x", long},
		"two long lines":            {"x", long, long, "y"},
		"line just before a long":   {strings.Repeat("p", 4095), long, "z"},
		"long ending at chunk edge": {"head", strings.Repeat("m", 64<<10-5), strings.Repeat("n", 4096-1)},
		"max line":                  {"x", strings.Repeat("M", maxLine), "y"},
		// Chunks end 4, 12, 28, 60 and 124 KiB before the end of the file:
		// this long line starts exactly on the last edge, right after "P".
		"long line starting at a chunk edge": {"first", "P", strings.Repeat("E", 126976-3), "y"},
		"many small":                         strings.Split(strings.Repeat("line of text\n", 20000), "\n"),
	}
	for name, lines := range tests {
		t.Run(name, func(t *testing.T) {
			doc := strings.Join(lines, "\n")
			if name != "no final newline" {
				doc += "\n"
			}
			type hit struct {
				off  int64
				line string
			}
			var want []hit
			off := 0
			for _, l := range strings.SplitAfter(doc, "\n") {
				if l != "" {
					want = append(want, hit{int64(off), strings.TrimSuffix(l, "\n")})
				}
				off += len(l)
			}
			var got []hit
			_, err := scanLinesBack(strings.NewReader(doc), int64(len(doc)), 0, func(off int64, line []byte, _ bool) bool {
				got = append(got, hit{off, string(line)})
				return false
			})
			if err != nil {
				t.Fatal(err)
			}
			i := len(want) - 1
			for _, g := range got {
				for i >= 0 && want[i].off > g.off {
					if len(want[i].line) <= maxLine {
						t.Fatalf("line at %d (%d bytes) missed", want[i].off, len(want[i].line))
					}
					i--
				}
				if i < 0 || want[i] != g {
					t.Fatalf("reported line at %d (%d bytes) is not a line of the file", g.off, len(g.line))
				}
				i--
			}
			for ; i >= 0; i-- {
				if len(want[i].line) <= maxLine {
					t.Fatalf("line at %d (%d bytes) missed", want[i].off, len(want[i].line))
				}
			}
		})
	}
}
