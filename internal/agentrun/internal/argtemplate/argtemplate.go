// Package argtemplate fills the values of a run ({model}, {prompt},
// {strand}, ...) into a generic command agent's argv, one element at a
// time and never as a flag, and finds the words in braces that name no
// value.
package argtemplate

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/knotd/knotd/internal/textbound"
)

// The template values a generic command may use in its argv elements:
//
//	{model}        the model (Agent.Model, or the strand's knot_model)
//	{session}      the strand's session UUID
//	{resume}       the resume handle (resume_command only)
//	{prompt}       the whole prompt (prompt: arg only)
//	{prompt_file}  the path of the prompt's 0600 temporary file (prompt: file only)
//	{vault}        the vault root
//	{strand}       the strand's vault-relative path
//	{event}        Created, Modified or Deleted
//	{run_id}       the run id
//
// A value is substituted inside the one element that names it and never
// splits into several elements; no shell ever sees it. Other text in braces
// is left alone by Expand (the configuration refuses a word in braces close to
// one of these names: see OtherPlaceholders).
var names = []string{"model", "session", "resume", "prompt", "prompt_file", "vault", "strand", "event", "run_id"}

// Names returns the names of the values a generic command may use in
// braces ({model}, {session}, ...).
func Names() []string { return slices.Clone(names) }

// Placeholder matches a word in braces, the form of a template value.
var Placeholder = regexp.MustCompile(`\{([A-Za-z][A-Za-z0-9_]*)\}`)

// OtherPlaceholders returns the words in braces in argv that name no
// template value ({sesion}), once each, in order: Expand leaves them
// as they are, which for a mistyped name is a mistake to report.
func OtherPlaceholders(argv []string) []string {
	var other []string
	for _, el := range argv {
		for _, m := range Placeholder.FindAllStringSubmatch(el, -1) {
			if !slices.Contains(names, m[1]) && !slices.Contains(other, m[1]) {
				other = append(other, m[1])
			}
		}
	}
	return other
}

// Expand returns tmpl with the values substituted. It fails when an
// element names a value that is not set, and when a substituted value would
// make an element start with "-" although its template does not: the value
// (a note's path, the prompt) would be read as a flag. An element after a
// literal "--" element is exempt, since the program then reads no more
// flags.
func Expand(tmpl []string, vals map[string]string) ([]string, error) {
	pairs := make([]string, 0, 2*len(vals))
	for _, name := range names {
		if v, ok := vals[name]; ok {
			pairs = append(pairs, "{"+name+"}", v)
		}
	}
	r := strings.NewReplacer(pairs...)
	out := make([]string, len(tmpl))
	endOfFlags := false
	for i, el := range tmpl {
		for _, name := range names {
			if _, ok := vals[name]; !ok && strings.Contains(el, "{"+name+"}") {
				return nil, fmt.Errorf("argument %d (%q) uses {%s}, which has no value in this run", i, el, name)
			}
		}
		out[i] = r.Replace(el)
		if !endOfFlags && strings.HasPrefix(out[i], "-") && !strings.HasPrefix(el, "-") {
			return nil, fmt.Errorf("argument %d (%q) would start with '-' once filled in (%q), and the program would read it as a flag; "+
				"put a \"--\" argument before it in the command, or use prompt: stdin",
				i, el, preview(out[i], 40))
		}
		if el == "--" {
			endOfFlags = true
		}
	}
	return out, nil
}

// preview shortens s for a message.
func preview(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return s[:textbound.CutBack(s, max)] + "…"
}
