// Package edits changes notes the way editors and tools save them (VS
// Code's truncate and write, vim's rename dance, a temporary file renamed
// over the note, a save without changes, a touch), and in bursts from
// several writers.
package edits

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// saveFunc writes a note the way some editor or tool saves it, and
// returns when the save was complete. token makes the new content unique.
type saveFunc func(abs, token string) (time.Time, error)

// Save is one way a note gets saved, and how many agent runs it should
// cause: one for a change, none for a save that changes nothing.
type Save struct {
	Name string
	Runs int
	Do   saveFunc
}

// Saves are the editor-save patterns of the peers scenario. gap spaces
// the writes of the autosave pattern: it must be shorter than knotd's
// quiet period for them to be one change.
func Saves(gap time.Duration) []Save {
	return []Save{
		{"truncate+write (VS Code)", 1, SaveTruncWrite},
		{"rename dance (vim)", 1, saveVim},
		{"temp+rename (Obsidian, Syncthing)", 1, saveAtomic},
		{"3 autosaves within the quiet period", 1, func(abs, token string) (time.Time, error) {
			var at time.Time
			for i := range 3 {
				if i > 0 {
					time.Sleep(gap)
				}
				var err error
				if at, err = SaveTruncWrite(abs, fmt.Sprintf("%s-%d", token, i)); err != nil {
					return at, err
				}
			}
			return at, nil
		}},
		{"save without changes", 0, saveSame},
		{"touch", 0, saveTouch},
	}
}

// edited returns the note's content with a line added.
func edited(abs, token string) ([]byte, error) {
	b, err := os.ReadFile(abs)
	if err != nil {
		return nil, err
	}
	return append(b, "\n- [ ] follow up "+token+"\n"...), nil
}

// SaveTruncWrite opens the note with O_TRUNC and writes the new content
// in two writes, as VS Code does.
func SaveTruncWrite(abs, token string) (time.Time, error) {
	b, err := edited(abs, token)
	if err != nil {
		return time.Time{}, err
	}
	return writeInTwo(abs, b)
}

func writeInTwo(abs string, b []byte) (time.Time, error) {
	f, err := os.OpenFile(abs, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return time.Time{}, err
	}
	_, err1 := f.Write(b[:len(b)/2])
	_, err2 := f.Write(b[len(b)/2:])
	if err := errors.Join(err1, err2, f.Close()); err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}

// saveVim saves as vim does with its default backupcopy: probe the
// directory with a file named 4913, rename the note to its backup, write
// the new note, delete the backup.
func saveVim(abs, token string) (time.Time, error) {
	b, err := edited(abs, token)
	if err != nil {
		return time.Time{}, err
	}
	probe := filepath.Join(filepath.Dir(abs), "4913")
	if err := os.WriteFile(probe, nil, 0o644); err != nil {
		return time.Time{}, err
	}
	if err := os.Remove(probe); err != nil {
		return time.Time{}, err
	}
	backup := abs + "~"
	if err := os.Rename(abs, backup); err != nil {
		return time.Time{}, err
	}
	if err := os.WriteFile(abs, b, 0o644); err != nil {
		return time.Time{}, err
	}
	if err := os.Remove(backup); err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}

// saveAtomic writes a temporary file beside the note and renames it over
// the note.
func saveAtomic(abs, token string) (time.Time, error) {
	b, err := edited(abs, token)
	if err != nil {
		return time.Time{}, err
	}
	tmp := filepath.Join(filepath.Dir(abs), "."+filepath.Base(abs)+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return time.Time{}, err
	}
	if err := os.Rename(tmp, abs); err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}

// saveSame rewrites the note with the content it has.
func saveSame(abs, _ string) (time.Time, error) {
	b, err := os.ReadFile(abs)
	if err != nil {
		return time.Time{}, err
	}
	return writeInTwo(abs, b)
}

// saveTouch updates the note's modification time only.
func saveTouch(abs, _ string) (time.Time, error) {
	now := time.Now()
	if err := os.Chtimes(abs, now, now); err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}

// burstWriters is how many goroutines write a burst: one alone cannot
// change 10,000 notes within a second on a loaded two-core machine while
// knotd takes their events.
const burstWriters = 4

// WriteAll appends a line with token to each of the notes abs, from
// burstWriters goroutines, and returns how long the writes took, first to
// last. The notes are opened before that span begins: opening a file is
// no change to it, and on a loaded two-core machine, with knotd running
// the first agents meanwhile, the opens were nearly all of the time
// (10,000 notes of a 100k vault: 1.2 s with them, 70 ms without). If a
// note cannot be opened, nothing is written.
func WriteAll(abs []string, token string) (time.Duration, error) {
	files := make([]*os.File, len(abs))
	closeAll := func() error {
		var errs []error
		for _, f := range files {
			if f != nil {
				errs = append(errs, f.Close())
			}
		}
		return errors.Join(errs...)
	}
	err := eachWriter(len(abs), func(i int) (err error) {
		files[i], err = os.OpenFile(abs[i], os.O_WRONLY|os.O_APPEND, 0)
		return err
	})
	if err != nil {
		return 0, errors.Join(fmt.Errorf("open the notes of a burst (a limit on open files? ulimit -n): %w", err), closeAll())
	}
	line := "\n- [ ] follow up " + token + "\n"
	start := time.Now()
	err = eachWriter(len(abs), func(i int) error {
		f := files[i]
		files[i] = nil
		_, werr := f.WriteString(line)
		return errors.Join(werr, f.Close())
	})
	span := time.Since(start)
	return span, errors.Join(err, closeAll())
}

// eachWriter calls fn(i) for i in [0, n) from burstWriters goroutines,
// each taking every burstWriters-th i, and returns their errors; a
// goroutine stops at its first.
func eachWriter(n int, fn func(i int) error) error {
	errs := make([]error, burstWriters)
	var wg sync.WaitGroup
	for w := range burstWriters {
		wg.Go(func() {
			for i := w; i < n; i += burstWriters {
				if err := fn(i); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Append adds a line at the end of the note with one O_APPEND write:
// the cheapest change, for bursts.
func Append(abs, token string) (err error) {
	f, err := os.OpenFile(abs, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	_, err = f.WriteString("\n- [ ] follow up " + token + "\n")
	return err
}
