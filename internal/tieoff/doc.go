// Package tieoff writes, replaces, reads and parses tie-offs: the Markdown
// file beside a strand ("a/b.md" -> "a/b.tieoff.md") in which knotd keeps
// one section per agent run, oldest first.
//
// # Format
//
// The section format, the run marker's fields and what is escaped in a
// reply are specified in docs/formats.md#tie-off-section. Format writes a
// section so; a reply that needed no escaping reads back byte for byte.
// Whether a reply leaves a block open is decided by parsing it with
// goldmark followed by a separator and a header: the header must come out
// as a top-level H2; if no closing line helps, the reply is fenced.
// Header imitations are escaped on every line, inside code fences too, so
// that a raw line scan (Tail, HasRun) never meets a fake header.
//
// # Reading
//
// Parse reads a tie-off with goldmark: a section starts at every top-level
// ATX H2 heading "Event: ...", which must be followed by the Strand and
// Timestamp headings; the Status heading, the marker and the "---" are
// optional when reading, so hand-written sections parse. The body runs to
// the separator before the next section (or to the end of the file). Text a
// user added between sections therefore belongs to the section above it.
// What cannot be read as a section (text before the first section, an
// Event heading not followed by Strand and Timestamp) is returned as a
// ParseError carrying its line and its text; a bad value in a header (an
// unknown event, a malformed timestamp) is a ParseError too, but its
// section is still returned. Lines that look like a section header but are
// not top-level headings (a user's unclosed fence above them swallowed them)
// are reported as well. CRLF line endings are read like LF, and a byte
// order mark at the start of the file is skipped. The last section is
// marked Torn when its reply is shorter than its run marker says.
//
// # Writing
//
// Append adds a section with a single write to a file opened with O_APPEND,
// then fsyncs. It looks at most at the last section (bounded by a 64 KiB
// window), never at the whole history, so its cost does not grow with the
// file; if a hand edit left a code fence or HTML block open at the end of
// the file, it closes it first. (It judges that from the last Event
// header line on: a header line a user typed inside a fence they left open
// can mislead it. Parse then reports the swallowed header lines.) Replace
// writes a file holding only the given section through a temporary file,
// synced and renamed over the tie-off, and syncs the directory.
//
// Tail and HasRun read from the end of the file and find sections by their
// Event header and run marker lines, which replies cannot imitate. Tail
// returns the newest sections within a count and a byte budget, for the
// Event Context; HasRun tells crash recovery whether a run's section is
// already in the file, reading only what was written after a given offset.
//
// # Questions and answers
//
// Besides runs' replies (and knotd's pause notices), a tie-off holds the
// questions of permissions: ask, a tool call held for the user (Section.Asked,
// "## Status: question", marker fields question= and call=), and their
// answers (Section.Verdict, "## Status: approved|denied|withdrawn", marker
// fields question= and verdict=), each with a run id of its own.
// Section.IsRun tells a run's section from these; OpenQuestions tells
// which questions still wait.
//
// # Conflict copies
//
// When two devices change a tie-off before they sync, Syncthing, Dropbox or
// Nextcloud keep one version and save the other as a conflict copy beside
// it ("x.tieoff.sync-conflict-20261123-120000-ABCDEFG.md",
// "x.tieoff (Ada's conflicted copy 2026-11-23).md"). ConflictOf recognises
// such a copy and names its tie-off. Merge merges the copy into the tie-off
// by run id: every run once, in time order, each section's bytes as they
// stand, nothing of the tie-off dropped; what of the copy it cannot place
// (text outside a section, a section without run id that the tie-off does
// not hold, a run whose text differs, a new section with problems) is
// listed in its report. MergeFile does it on disk, durably, and removes the
// copy only when nothing of it was left out, so no word is ever lost.
//
// # Files
//
// Every function that touches a file takes the vault as an *os.Root and
// the tie-off as a slash-separated name relative to it, and goes through
// internal/vaultfs: no symbolic link or ".." on the way leads out of the
// vault; a symbolic link at the tie-off's own name is never followed, not
// even to a note inside the vault; a FIFO, a directory or anything else
// that is not a regular file is refused (ErrNotRegular) without blocking;
// a tie-off with other hard links is never appended to: Append and
// Replace put a new file at its name (a copy with the new section, or the
// new section alone), and the other names keep their old content. Every read is bounded: Read and MergeFile refuse a
// file larger than maxReadSize (ErrTooLarge), Tail reads at most its byte
// budget (at most maxReadSize), Append reads at most the last 64 KiB, and
// HasRun reads in chunks of at most 64 KiB.
//
// The functions here keep no state between calls and are safe to call
// from several goroutines for different files.
package tieoff
