// Package tieoff writes, replaces, reads and parses tie-offs: the Markdown
// file beside a strand ("a/b.md" -> "a/b.tieoff.md") in which knotd keeps
// one section per agent run, oldest first.
//
// # Format
//
// A section is these lines, in this order (DESIGN §4.1):
//
//	## Event: Modified
//	## Strand: ideas/plan.md
//	## Timestamp: 2026-11-21T19:30:05Z
//	## Status: failed                          (failed runs only)
//	<!-- knot:run RUN_ID bytes=N sha256=HEX session=SESSION -->
//	---
//	(blank line)
//	<agent reply>
//
// The Event label is Created, Modified or Deleted; the Strand is the
// vault-relative slash path; the Timestamp is UTC with second precision.
//
// The run marker is an HTML comment on its own line, so it renders as
// nothing. Each section carries it so that a section can be found again,
// recovery after a crash never appends the same run twice, and knotd can
// link a section to its transcript (.knot/runs/<RUN_ID>.jsonl). Format
// writes it exactly as above, for example
//
//	<!-- knot:run 0190f3c2-7b1a-7c3d-9e2f-1a2b3c4d5e6f bytes=1234 sha256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 session=0190f3c1-2b3c-7d4e-8f90-a1b2c3d4e5f6 -->
//
// with its fields in this order: bytes is the length in bytes of the reply
// as written, which lets a reader notice a last section that a crash cut
// short (Section.Torn); sha256 is what the section answered, the content
// hash of the strand version the run ran on (Section.Hash: 64 lower-case
// hex digits), and session the note's session (Section.Session), so that
// a device without knotd's state can tell which notes are answered. The
// sha256 and session fields are there only when known. A reader takes the
// key=value fields after the run id in any order and ignores keys it does
// not know, so that markers a newer knotd writes still read; a key given
// twice, a field that is not key=value, or a bad value of a known key make
// the marker malformed (a ParseError; the section is read without run id).
// The older forms "<!-- knot:run RUN_ID -->" and
// "<!-- knot:run RUN_ID bytes=N -->" read as before.
//
// Sections follow each other with a separator: a blank line, a "---" line
// and a blank line, so the last paragraph of a reply never becomes a setext
// heading. A file therefore renders as CommonMark in which every section's
// headers are top-level H2 headings and every reply keeps its own structure.
//
// A strand path is written as it is, except that a backslash is written
// "\\" and a byte that could break the header line or that is not UTF-8
// (control characters, DEL, invalid UTF-8, and a space at either end of the
// path) is written as "\xHH". Valid strand paths never contain a backslash
// (see strand.ValidateRel), so ordinary paths, including ones with spaces,
// emoji or leading dashes, appear unchanged.
//
// # Replies are neutralised
//
// Format writes the reply unchanged except for what would make the file
// ambiguous:
//
//   - A line that imitates one of the headers ("## Event:", "## Strand:",
//     "## Timestamp:", "## Status:", with any indentation, any number of
//     '#', any case) gets a backslash before its first '#'. This is done on
//     every line, inside code fences too, so that a raw line scan (Tail,
//     HasRun) never meets a fake header. Rendered outside code the line looks
//     the same; inside code the backslash shows.
//   - Text that imitates the run marker ("<!--" then "knot" then ':') gets
//     a backslash before the ':'.
//   - A reply that does not end with a newline gets one.
//   - A reply that would leave a block open at its end (an unclosed ``` or
//     ~~~ fence, an unclosed <!--, <pre>, <script>, <style>, <textarea>, <?,
//     <!X or <![CDATA[ HTML block) gets the line that closes it. Whether
//     a reply is closed is decided by parsing it with goldmark followed by a
//     separator and a header: the header must come out as a top-level H2. If
//     no closing line helps, the whole reply is put in a code fence longer
//     than any backtick run inside it, which always closes. Open lists, block
//     quotes, indented code and paragraphs need nothing: the separator's blank
//     line and "---" close them.
//
// A reply that needed none of this is read back byte for byte.
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
