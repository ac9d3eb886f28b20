// Package strand holds knotd's domain words: a Strand (one Markdown note in a
// vault), the three event types that can happen to it, and the path rules
// that decide which files are strands and where a strand's tie-off lives.
// The words are defined in docs/design.md#words (users read "note" where
// the code says strand).
//
// Paths inside a vault are always vault-relative, slash-separated and clean
// ("ideas/plan.md"); they never start with "/" and never contain "..". Every
// function here that accepts such a path validates it with ValidateRel, so a
// path derived from a note can never name a file outside the vault.
//
// The package imports nothing of knotd's and does no I/O beyond the file
// information its callers hand it.
package strand
