package frontmatter

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"gopkg.in/yaml.v3"
)

// checkField validates a string field's value; it returns a message or "".
func checkField(f int, s string) string {
	switch f {
	case fieldSession:
		return checkSession(s)
	case fieldMode:
		return checkMode(s)
	case fieldModel:
		return checkModel(s)
	default: // resume handle, agent name
		if s == "" {
			return "the value is empty; remove the key or give it a value"
		}
		if !utf8.ValidString(s) {
			return "the value is not valid UTF-8"
		}
		return ""
	}
}

func checkSession(s string) string {
	if _, err := uuid.Parse(s); err != nil || len(s) != 36 {
		return short(s) + " is not a UUID like 0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21"
	}
	return ""
}

func checkMode(s string) string {
	switch Mode(strings.ToLower(s)) {
	case ModeAppend, ModeReplace, ModeOff:
		return ""
	}
	return "unknown mode " + short(s) + "; want append, replace or off"
}

func checkModel(s string) string {
	switch {
	case s == "":
		return "the model name is empty"
	case !utf8.ValidString(s):
		return "the model name is not valid UTF-8"
	case strings.HasPrefix(s, "-"):
		return "the model name " + short(s) + " starts with \"-\" and could be read as a flag"
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return "the model name " + short(s) + " holds a control character"
	}
	return ""
}

// checkEvents validates event names and returns them lower-cased without
// repeats.
func checkEvents(names []string) ([]string, string) {
	out := make([]string, 0, len(names))
	for _, s := range names {
		e := strings.ToLower(s)
		switch e {
		case "created", "modified", "deleted", "scheduled":
		default:
			return nil, "unknown event " + short(s) + "; want created, modified, deleted or scheduled"
		}
		dup := false
		for _, o := range out {
			dup = dup || o == e
		}
		if !dup {
			out = append(out, e)
		}
	}
	return out, ""
}

// describe names a node's type and value for a message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a map"
	case yaml.AliasNode:
		return "an alias *" + n.Value
	case yaml.ScalarNode:
		v := short(n.Value)
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!str":
			return "the text " + v
		case "!!int", "!!float":
			return "the number " + v
		case "!!bool":
			return "the boolean " + v
		case "!!timestamp":
			return "the date " + v
		default:
			return n.ShortTag() + " " + v
		}
	}
	return "nothing"
}

func quoteHint(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null" && n.ShortTag() != "!!str" {
		return "; put it in quotes (\"" + n.Value + "\") if you mean the text"
	}
	return ""
}

// short quotes a value for a message, cut to a readable length.
func short(s string) string {
	const max = 60
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "…"
	}
	return strconv.Quote(s)
}
