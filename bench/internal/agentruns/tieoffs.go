package agentruns

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// InTieOffs counts, for each strand of the vault, the run markers in its
// tie-off: how many sections knotd appended.
func InTieOffs(root string) (map[string]int, error) {
	runs := map[string]int{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir
		}
		name, ok := strings.CutSuffix(p, ".tieoff.md")
		if !ok || d.IsDir() {
			return nil
		}
		n, err := Sections(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, name+".md")
		if err != nil {
			return err
		}
		runs[filepath.ToSlash(rel)] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count tie-off sections: %w", err)
	}
	return runs, nil
}

// Sections counts the run markers in the tie-off at path: the sections
// knotd appended to it.
func Sections(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close() // read only
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if bytes.HasPrefix(sc.Bytes(), []byte("<!-- knot:run ")) {
			n++
		}
	}
	return n, sc.Err()
}

// Added is after minus before, strand by strand.
func Added(before, after map[string]int) map[string]int {
	added := map[string]int{}
	for s, n := range after {
		if d := n - before[s]; d != 0 {
			added[s] = d
		}
	}
	return added
}
