// Package proc reads the figures of a process that the bench reports
// (memory, CPU time, inotify watches) from Linux's /proc and getrusage,
// and starts and signals process groups. The bench measures on Linux
// only: elsewhere Supported says why, and the figures are errors.
package proc

// Mem is a process's memory, in bytes, from /proc/PID/status.
type Mem struct {
	Peak int64 // VmHWM: the peak resident set size
	RSS  int64 // VmRSS: resident now
	Anon int64 // RssAnon: of which anonymous memory (the Go heap, stacks)
	File int64 // RssFile: of which file pages mapped in (the binary, bbolt's mmap)
}
