package kit

// Limits bounds the parts of a prompt so that its size does not grow with
// the strand's history. Fields that are zero or negative take the defaults
// of agentrun.DefaultLimits (the tie-off ones may be raised by a preset with
// no conversation memory, such as ollama: see Limiter).
type Limits struct {
	// Content is how much of the strand (or, for Deleted, of its last
	// content) is shown, in bytes; the middle of a larger strand is left
	// out.
	Content int
	// Diff is the size of the Changes diff, in bytes; its end is left out.
	Diff int
	// TieOffSections is how many of the newest tie-off sections are shown.
	TieOffSections int
	// TieOffBytes bounds those sections together, in bytes.
	TieOffBytes int
	// Prompt is the hard cap on the whole prompt, in bytes.
	Prompt int
}
