// Package frontmatter reads and surgically edits the YAML frontmatter of a
// strand: knotd's own keys, in a block the user shares with Obsidian, Hugo,
// Jekyll and whatever else reads their notes.
//
// # The block
//
// A strand has frontmatter when its first line (after an optional UTF-8
// BOM) is "---". The block ends at the next line that is "---" starting in
// the first column; both delimiter lines may carry trailing blanks and a
// CRLF, and the closing line may end the file. An indented "---" (inside a
// "|" block scalar, say) is YAML content, as it is for YAML itself and for
// Jekyll, Hugo and Obsidian. A strand whose first line is anything else,
// even a blank line, has no frontmatter: every field is unset and the whole
// file is body. The YAML inside must be a map of keys, in block style
// (key: value lines), or empty; a "..." line ends it early, as in YAML.
// Other formats (TOML between "+++", JSON) are not frontmatter to knotd;
// the edits refuse a strand that starts with "+++" rather than put a YAML
// block on top of it.
// The YAML is decoded with github.com/adrg/frontmatter and gopkg.in/yaml.v3;
// knotd's own scanner finds the exact bytes of the block and of each key,
// which is what the edits need.
//
// # knotd's keys
//
//	knot_session  the strand's session UUID, written by knotd before its first run
//	              where the user asks for it (write_session: true)
//	knot_resume   the agent's resume handle (read; knotd does not write it)
//	knot_mode     append (default) | replace | off
//	knot_agent    name of an agent defined in trusted config
//	knot_model    model name, handed to the agent as one argv element
//	knot_events   created, modified and/or deleted: one name or a list (default all)
//
// agent-doc's names are read as aliases, never written: agent_doc_session
// and session for knot_session, resume for knot_resume, agent_doc_mode and
// mode for knot_mode. The canonical key beats every alias (and an alias it
// shadows is not even checked), agent_doc_* beats the short alias.
//
// Values are exact: a string field is the YAML string as written, never
// re-spelled. A null value is the same as an absent key. A value of the
// wrong type or an unknown value is a problem, never a silent default:
// knot_model: 123 is a number (YAML reads it so; quote it to mean the
// name), knot_events: [bogus] names no event, a session that is not a UUID
// is not used, and a knot_* key that knotd does not know is probably a typo
// (knot_mdoe: off would otherwise quietly leave the strand running). Parse
// lists these in Fields.Problems as *FieldError values that name the line,
// the key and the fix; ResolveMode reports a bad mode as its error.
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
