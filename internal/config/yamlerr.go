package config

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// This file words the YAML library's errors for people: the line where
// the mistake is (yaml.v3 names the line where the enclosing block begins
// for an indentation mistake), the key, and what was expected, with no Go
// type names.

var (
	// reSyntax matches yaml.v3's syntax errors.
	reSyntax = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)
	// reTypeLine matches one of a yaml.TypeError's messages.
	reTypeLine = regexp.MustCompile(`^line (\d+): (.*)$`)
	// reUnmarshal matches a value of the wrong kind.
	reUnmarshal = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `(.*)`)? into (.+)$")
	// reUnknown matches a key that KnownFields refused.
	reUnknown = regexp.MustCompile(`^field (.+) not found in type (\S+)$`)
	// reDuplicate matches a key given twice.
	reDuplicate = regexp.MustCompile(`^mapping key "(.*)" already defined at line (\d+)$`)
)

// syntaxError words a YAML syntax error of the file name (its bytes data).
func syntaxError(name string, data []byte, err error) error {
	m := reSyntax.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("config %s: not valid YAML: %v", name, err)
	}
	problem := m[2]
	line, _ := strconv.Atoi(m[1])
	if line == 0 && strings.Contains(problem, "cannot start any token") {
		line = 1 // yaml.v3 leaves out a line number of 0: the first line
	}
	if strings.Contains(problem, "end of stream") {
		// yaml.v3 names the file's end; the quote that is not closed is
		// on the first line that makes the same error.
		line = 1
	}
	if line > 0 {
		// Where the problem is, rather than where its block began.
		line = problemLine(data, line, problem)
	}
	text := ""
	if lines := strings.Split(string(data), "\n"); line > 0 && line <= len(lines) {
		text = lines[line-1]
	}
	var words string
	switch {
	case strings.Contains(problem, "tab") || strings.Contains(problem, "cannot start any token") && strings.Contains(leadingSpace(text), "\t"):
		words = "a tab in the indentation; YAML indents with spaces only"
	case problem == "did not find expected key":
		words = "this line is indented differently from the lines above it (the keys of one map, and the '- ' items of one list, start in the same column; a key's value is indented under it)"
	case problem == "mapping values are not allowed in this context":
		words = "a 'key: value' where no key can be: check this line's indentation (a key's value goes on the same line, or indented on the lines below it), or put quotes around a value that holds ': '"
	case problem == "did not find expected '-' indicator":
		words = "this line is indented differently from the list items above it (every '- ' of one list starts in the same column)"
	case problem == "did not find expected node content", problem == "did not find expected ',' or ']'", problem == "did not find expected ',' or '}'":
		words = "a [list] or {map} that is not closed, or a value missing: check the brackets and commas"
	case strings.Contains(problem, "found unexpected end of stream"):
		words = "a quote that opens here is not closed before the file ends"
	case strings.Contains(problem, "cannot start any token"):
		words = "a value begins with a character YAML reserves (such as @, ` or %): put the value in quotes"
	default:
		words = "not valid YAML: " + problem
	}
	if line == 0 {
		return fmt.Errorf("config %s: %s", name, words)
	}
	return fmt.Errorf("config %s: line %d: %s", name, line, words)
}

func leadingSpace(s string) string {
	return s[:len(s)-len(strings.TrimLeft(s, " \t"))]
}

// problemLine returns the line of data where the syntax error reported at
// line (where the enclosing block begins, for many of yaml.v3's errors)
// really is: the first line whose addition to the lines before it makes
// the same error appear. It falls back to line.
func problemLine(data []byte, line int, problem string) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	fails := func(n int) bool { // the first n lines fail with problem
		var node yaml.Node
		err := yaml.Unmarshal(bytes.Join(lines[:n], nil), &node)
		if err == nil {
			return false
		}
		m := reSyntax.FindStringSubmatch(err.Error())
		return m != nil && m[2] == problem
	}
	if line > len(lines) {
		return line
	}
	// The first lines up to the reported one parse, or fail otherwise
	// (a cut list); with the whole file the error is there. Search the
	// smallest prefix that has it.
	n := line + sort.Search(len(lines)-line+1, func(i int) bool { return fails(line + i) })
	if n > len(lines) || n < line {
		return line
	}
	return n
}

// typeErrors words yaml.v3's type errors for people, one per problem (a
// line each when there are several), each with its line and key path
// (agents.mine.timeout) found in root, the file's node tree.
func typeErrors(root *yaml.Node, te *yaml.TypeError) string {
	msgs := make([]string, 0, len(te.Errors))
	for _, msg := range te.Errors {
		msgs = append(msgs, typeError(root, msg))
	}
	if len(msgs) == 1 {
		return msgs[0]
	}
	return fmt.Sprintf("%d mistakes:\n  %s", len(msgs), strings.Join(msgs, "\n  "))
}

func typeError(root *yaml.Node, msg string) string {
	m := reTypeLine.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	line, _ := strconv.Atoi(m[1])
	body := m[2]
	at := func(path string) string {
		if path == "" {
			return fmt.Sprintf("line %d: ", line)
		}
		return fmt.Sprintf("line %d: %s: ", line, path)
	}
	if u := reUnmarshal.FindStringSubmatch(body); u != nil {
		tag, value, goType := u[1], u[2], u[3]
		// yaml.v3 shortens long values to their start and " ...".
		start, cut := strings.CutSuffix(value, " ...")
		var node *yaml.Node
		path := findPath(root, line, func(n *yaml.Node, _ bool) bool {
			ok := n.ShortTag() == "!!"+tag && (value == "" || n.Value == value || cut && strings.HasPrefix(n.Value, start))
			if ok {
				node = n
			}
			return ok
		})
		if node != nil && value != "" {
			value = node.Value
		}
		want := expected(goType)
		found := foundWords(tag, value)
		if goType == "time.Duration" && (tag == "int" || tag == "float") {
			return at(path) + fmt.Sprintf("expected %s, found %s: add a unit, e.g. %ss", want, found, value)
		}
		return at(path) + fmt.Sprintf("expected %s, found %s", want, found)
	}
	if u := reUnknown.FindStringSubmatch(body); u != nil {
		key, goType := u[1], u[2]
		path := findPath(root, line, func(n *yaml.Node, isKey bool) bool { return isKey && n.Value == key })
		path = strings.TrimSuffix(strings.TrimSuffix(path, key), ".")
		s := at(path) + fmt.Sprintf("unknown key %q", key)
		if keys := knownKeys(goType); len(keys) > 0 {
			if near := nearest(key, keys); near != "" {
				s += "; did you mean " + near + "?"
			} else {
				s += " (the keys here are " + strings.Join(keys, ", ") + ")"
			}
		}
		return s
	}
	if u := reDuplicate.FindStringSubmatch(body); u != nil {
		return at("") + fmt.Sprintf("the key %s is given twice (first at line %s); keep one", u[1], u[2])
	}
	path := findPath(root, line, func(_ *yaml.Node, isKey bool) bool { return isKey })
	return at(path) + body
}

// findPath returns the key path (agents.mine.timeout, ignore[2]) of the
// node on line that match accepts (told whether the node is a key), the
// deepest such, or "".
func findPath(root *yaml.Node, line int, match func(n *yaml.Node, isKey bool) bool) string {
	best, bestDepth := "", -1
	var walk func(n *yaml.Node, path string, depth int)
	walk = func(n *yaml.Node, path string, depth int) {
		if n.Line == line && depth > bestDepth && match(n, false) {
			best, bestDepth = path, depth
		}
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path, depth)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				if k.Line == line && depth+1 > bestDepth && match(k, true) {
					best, bestDepth = p, depth+1
				}
				walk(v, p, depth+1)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s[%d]", path, i+1), depth+1)
			}
		}
	}
	walk(root, "", 0)
	return best
}

// expected says in plain words what a Go type of the configuration holds.
func expected(goType string) string {
	switch goType {
	case "time.Duration":
		return "a duration with a unit (300ms, 2s, 10m, 1h)"
	case "int", "int64":
		return "a whole number"
	case "bool":
		return "true or false"
	case "string", "agentrun.PromptMode", "agentrun.OutputFormat", "agentrun.Permissions":
		return "a single value (a word or a text)"
	case "[]string":
		return "a list, such as [a, b] or lines that begin with '- '"
	case "map[string]string":
		return "NAME: value pairs, such as {API_BASE: http://localhost}"
	case "map[string]agentrun.Agent":
		return "agents by name, each with its keys (mine: {command: [mytool]})"
	case "agentrun.Agent":
		return "an agent's keys, such as preset, command and prompt"
	case "config.Settings":
		return "keys such as debounce: 2s and agents: (a config file is a map of keys)"
	case "config.LimitSettings":
		return "limits by name, such as content: 256KiB"
	case "config.BudgetSettings":
		return "caps by name, such as day_runs: 50 or day_usd: 5"
	case "config.BreakerSettings":
		return "breakers by name, such as failures: 3"
	case "config.NotifySettings":
		return "where to notify, such as desktop: true or url: https://ntfy.sh/your-topic"
	}
	return "a value of another kind"
}

// foundWords says in plain words what a YAML value of tag is.
func foundWords(tag, value string) string {
	switch tag {
	case "seq":
		return "a list"
	case "map":
		return "keys and values (a map)"
	case "str":
		return strconv.Quote(value)
	case "int", "float":
		return "the number " + value
	case "bool":
		return value
	case "null":
		return "nothing"
	}
	return "a value of another kind (" + tag + ")"
}

// knownKeys returns the keys of the configuration's struct type named
// goType (as yaml.v3 names it), sorted.
func knownKeys(goType string) []string {
	t, ok := structTypes()[goType]
	if !ok {
		return nil
	}
	var keys []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" && name != "name" {
			keys = append(keys, name)
		}
	}
	slices.Sort(keys)
	return keys
}

// structTypes returns the struct types of a config file, Settings and
// those nested in it (budget:, limits:, an agent's keys), by the names
// yaml.v3's errors give them ("config.BudgetSettings").
func structTypes() map[string]reflect.Type {
	types := map[string]reflect.Type{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			walk(t.Elem())
		case reflect.Struct:
			if _, seen := types[t.String()]; seen {
				return
			}
			types[t.String()] = t
			for i := range t.NumField() {
				if f := t.Field(i); f.IsExported() {
					walk(f.Type)
				}
			}
		}
	}
	walk(reflect.TypeFor[Settings]())
	return types
}

// nearest returns the key nearest to a mistyped one, or "".
func nearest(typo string, keys []string) string {
	best, bestD := "", 3
	for _, k := range keys {
		if d := distance(typo, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// distance is the optimal-string-alignment edit distance of a and b.
func distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// keyLines returns the line of every key of the file whose node tree is
// root, by its path: debounce, limits.content, agents.mine.timeout, and
// rules[0].path for a list's items.
func keyLines(root *yaml.Node) map[string]int {
	lines := map[string]int{}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				lines[p] = k.Line
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
	walk(root, "")
	return lines
}
