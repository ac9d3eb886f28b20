// Package archtest holds tests about the module's shape: which of its
// packages may depend on which.
package archtest

import (
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// moduleRoot returns the directory of go.mod and the module path.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for line := range strings.Lines(string(data)) {
				if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					return dir, strings.TrimSpace(m)
				}
			}
			t.Fatalf("%s has no module line", filepath.Join(dir, "go.mod"))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// importGraph returns, for each package of the module, the import paths
// its non-test files import. It reads every non-test .go file whatever
// its build constraints, so the graph is the union over all platforms.
func importGraph(t *testing.T) map[string][]string {
	t.Helper()
	root, module := moduleRoot(t)
	graph := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		pkg := path.Join(module, filepath.ToSlash(rel))
		imports := graph[pkg]
		for _, spec := range f.Imports {
			ip, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if !slices.Contains(imports, ip) {
				imports = append(imports, ip)
			}
		}
		graph[pkg] = imports
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return graph
}

// byName returns the one module package whose last path element is name,
// so that the rules below survive a move of the packages (under internal/).
func byName(t *testing.T, graph map[string][]string, name string) string {
	t.Helper()
	var found []string
	for pkg := range graph {
		if path.Base(pkg) == name {
			found = append(found, pkg)
		}
	}
	if len(found) != 1 {
		t.Fatalf("packages named %q: %v; want exactly one", name, found)
	}
	return found[0]
}

// pathTo returns the chain of imports by which from reaches to (from
// first), or nil if it does not.
func pathTo(graph map[string][]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, ip := range graph[p] {
			if _, seen := prev[ip]; seen {
				continue
			}
			prev[ip] = p
			if ip == to {
				chain := []string{to}
				for q := p; q != ""; q = prev[q] {
					chain = append(chain, q)
				}
				slices.Reverse(chain)
				return chain
			}
			queue = append(queue, ip)
		}
	}
	return nil
}

// TestForbiddenDependencies checks that a package does not depend, even
// through others, on what it has no need of: the scheduler is a queue
// and needs no config (and with it a YAML parser and every preset); the
// config needs no state (and with it bbolt) to hash a file.
func TestForbiddenDependencies(t *testing.T) {
	graph := importGraph(t)
	for _, tc := range []struct {
		from string
		to   string // a module package's name, or a full import path
	}{
		{"scheduler", "config"},
		{"scheduler", "go.etcd.io/bbolt"},
		{"scheduler", "gopkg.in/yaml.v3"},
		{"config", "state"},
		{"config", "go.etcd.io/bbolt"},
	} {
		t.Run(tc.from+"->"+tc.to, func(t *testing.T) {
			from, to := byName(t, graph, tc.from), tc.to
			if !strings.Contains(to, ".") {
				to = byName(t, graph, to)
			}
			if chain := pathTo(graph, from, to); chain != nil {
				t.Errorf("%s depends on %s: %s", from, to, strings.Join(chain, " -> "))
			}
		})
	}
}
