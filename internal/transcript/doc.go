// Package transcript keeps the machine record of one agent run: an
// append-only JSON Lines file, <dir>/<run-id>.jsonl in the vault's folder
// of knotd's state directory, that a user audits when an agent did
// something surprising and that live tools follow while the run goes on.
//
// # The line format
//
// The envelope (seq, run_id, type, time, data) and its types are specified
// in docs/formats.md#transcript-line and guarded by a golden file
// (testdata/transcript.golden). Type names the closed vocabulary; each
// type's payload is a Go type here (Started, UserMessage, AssistantMessage,
// Finished, TieOff). A line of a type this version does not know keeps its
// payload as raw JSON, and writing the event again gives the same line.
// Fields outside the envelope's five are not kept.
//
// Assistant output is a list of content blocks (Block) of four kinds: text,
// thinking, tool_use and tool_result, each with a fidelity marker saying
// how faithfully it was recovered from what the CLI printed (native,
// reconstructed or text-only). Each agent's package under agents/ reads its
// CLI's output into blocks (with agents/kit's Decoder) and names its
// output formats (Format, recorded in each message); this package knows
// none of them. A run may have
// several message.assistant events: the blocks a streaming CLI printed, in
// batches as they became final, then what was left with the notes.
//
// # Writing
//
// A Recorder owns one run's file: created 0600 with O_EXCL (a run id is
// never reused) in a 0700 directory, opened O_APPEND, each line written
// with one write call while a mutex is held, so lines never interleave,
// whatever their length. A line reaches the file before it reaches any
// subscriber. Close syncs the file to disk. While a Recorder is open it
// holds an advisory lock on its file, which is how Prune knows not to
// delete a run still being written.
//
// Secrets do not reach the file: argv elements that look like keys or tokens
// are masked, and so is every occurrence, anywhere in a payload, of the
// value of an environment variable whose name looks secret (see Masker).
//
// # Following a run
//
// Subscribe hands out a bounded channel of the events written after it.
// A subscriber that falls behind loses its oldest undelivered events (they
// are counted by Dropped, and remain in the file); it never slows the
// writer. The newest events, such as run.finished, are always delivered.
//
// # Reading, listing, pruning
//
// Read and ReadFile decode a transcript, tolerating a torn last line (a
// crash mid-write) and damaged lines, which are reported as Warnings while
// everything else decodes. List summarises the runs of a directory from
// each file's first line and last bytes, Render prints one run for people,
// and Prune deletes old transcripts by age and count.
package transcript
