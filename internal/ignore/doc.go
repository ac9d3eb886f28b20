// Package ignore decides which paths of a vault knotd leaves alone, and
// walks a vault by those rules. It needs no watcher: the watcher asks it
// what to watch, the vault's reconcile walks with it, and knotd
// --explain-ignore (Rules.Explain) says why. Users read the rules in
// docs/configuration.md#ignored-paths.
//
// # Rules
//
// Built in: every dot-directory (.git, .knot, .obsidian, .trash,
// .stversions, .stfolder...), node_modules, and Obsidian's config folder
// under a configured name (Rules.ConfigDir). Then the patterns of
// .gitignore, .ignore and .knotignore files in every directory, applying
// to the paths below that directory with gitignore semantics: "!"
// negation, "/" anchoring, "*", "?", "**", character classes, backslash
// escapes, a trailing "/" for directories only, the deeper file and the
// later line winning, and nothing re-included below an excluded
// directory. In one directory a .knotignore line beats a .ignore line,
// which beats a .gitignore line. Patterns from knotd's configuration
// (Rules.Patterns) come last: an ignore file can re-include what they
// exclude. A path strand.ValidateRel rejects is ignored.
//
// # Walking
//
// Rules.Walk walks a vault or a folder of it by the rules, reading each
// directory's ignore files before deciding about its entries, never
// following a symbolic link, and never entering a folder below its root
// that holds a .knot (VaultMarker): that is a vault of its own. Rules.Load
// reads the ignore files above one path, for a question about a path no
// walk has reached. The watcher keeps the rules current as ignore files
// change (IsFile tells them) and drops those of a folder that is gone
// (Rules.Forget).
//
// # Agreement with git
//
// The gitignore matching is knotd's own. go-git's plumbing/format/gitignore
// was considered and measured against git itself, and differs from git in
// ways that matter here: a pattern without a slash matches any ancestor
// element, so "!notes" re-included notes/a.md although "*.md" excludes
// it; patterns with a slash match path prefixes, so "!a/b" re-included
// a/b/c.md; "dir/**" matched dir itself, so "!dir/keep.md" could never
// re-include; and "[!x]" classes were not negations.
//
// The tests compare Rules with git check-ignore: on a table of tricky
// cases, and in a fuzz target (FuzzRules_MatchesGit) that generates
// .gitignore files and paths. Where knotd differs from git on purpose:
// dot-directories, node_modules and the Obsidian config folder are always
// ignored, and nothing below them can be re-included; .ignore and
// .knotignore files are read too; matching is case-sensitive (git follows
// core.ignorecase); "?" and classes match characters rather than bytes;
// .git/info/exclude and core.excludesFile are not read; and a path that is
// not a valid vault-relative path (a backslash, a volume name such as
// "C:", "." or ".." elements) is ignored.
package ignore
