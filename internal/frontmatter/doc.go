// Package frontmatter reads and surgically edits the YAML frontmatter of a
// strand: knotd's own keys, in a block the user shares with Obsidian, Hugo,
// Jekyll and whatever else reads their notes.
//
// # The block and knotd's keys
//
// What is frontmatter, knotd's keys (knot_session, knot_resume, knot_mode,
// knot_agent, knot_model, knot_events, knot_answer, knot_schedule), their aliases (agent-doc's names,
// read and never written) and how their values are read are specified in
// docs/formats.md#frontmatter. The YAML is decoded with
// github.com/adrg/frontmatter and gopkg.in/yaml.v3; knotd's own scanner
// finds the exact bytes of the block and of each key, which is what the
// edits need. Parse lists the problems of a value (wrong type, unknown
// value, unknown knot_* key) in Fields.Problems as *FieldError values that
// name the line, the key and the fix; ResolveMode reports a bad mode as
// its error.
//
// Parse fails, with a *SyntaxError naming the line of the source, only when
// the block is unterminated or is not YAML (or not a map of keys, or holds
// one of knotd's keys twice). It never panics.
//
// # Editing
//
// SetSession, AskNewSession and MergeFields change the keys they set and
// nothing else; WithoutOwnKeys takes knotd's own keys out with MergeFields. Every other byte stays as it was: the user's
// keys, comments, key order, quoting, blank lines, CRLF line endings, a
// BOM, and the body. A value on its key's line is replaced by itself,
// keeping the spacing before it and any comment after it. A value that
// spans lines (a block list, a nested map, a block scalar) is replaced as a
// whole, with any comment inside it; a comment on the key's own line
// survives. A new key goes at the end of the block, in the block's
// indentation and line ending. A deleted key takes its lines with it but
// not the blank or comment lines after it. A strand without frontmatter
// gets a block at the top, after its BOM, with the body after it unchanged.
// Values are written on one line as YAML that reads back exactly: plain
// when that is unambiguous, else quoted.
//
// Each edit is checked before it is returned: the result is parsed again,
// and unless the edited keys read as intended and every other key still
// has the same value in the same order, the edit is refused with an error
// and the strand is left alone. Layouts that cannot be edited in place
// (a block written as one flow map {…}, a key in explicit "? key" form, a
// key set twice) are refused the same way.
//
// The edits work on bytes. WriteFile puts the result on disk atomically
// and refuses to replace a file that changed since it was read.
//
// Everything in this package may be called from several goroutines at
// once (WriteFile on different files); nothing starts a goroutine.
package frontmatter
