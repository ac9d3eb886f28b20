// Package profiled is knotd under the profiler: knotbench's
// knotd-profiled command, which opens the vault as cmd/knotd does with
// runtime/pprof on (knotd itself has no profiling flag), the signal that
// asks it for a heap profile, the same profiles of the bench's own
// process (for scenarios measured in process), and go tool pprof -top of
// the result.
package profiled

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/vault"
)

// Run is knotbench's knotd-profiled command: knotd's --once and
// watch modes, wired as cmd/knotd wires them (JSON log, user config file,
// --debounce and --concurrency flags), with a CPU profile of the whole
// life of the process and a heap profile at its end. knotd itself has no
// profiling flag; this variant lets the harness see where its time goes.
func Run(ctx context.Context, args []string, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("knotd-profiled", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cpuFile := fs.String("cpuprofile", "", "write a CPU profile to `FILE`")
	memFile := fs.String("memprofile", "", "write a heap profile to `FILE` at exit")
	once := fs.Bool("once", false, "one pass, then exit")
	configFile := fs.String("config", "", "user config `FILE`")
	debounce := fs.Duration("debounce", 0, "quiet period")
	concurrency := fs.Int("concurrency", 0, "agents at once")
	fs.String("log-format", "json", "accepted for knotd's command line; the log is always JSON")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: knotbench knotd-profiled [-cpuprofile FILE] [-memprofile FILE] [knotd flags] VAULT\n\n"+
			"knotd's watch mode and --once under the profiler. The heap profile is written when\n"+
			"a --once pass ends, and in watch mode each time the process gets SIGUSR1.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("knotd-profiled: want one VAULT")
	}
	root, err := filepath.Abs(fs.Arg(0))
	if err != nil {
		return err
	}
	var flags config.Settings
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "debounce":
			flags.Debounce = debounce
		case "concurrency":
			flags.Concurrency = concurrency
		}
	})
	if *cpuFile != "" {
		f, err := os.Create(*cpuFile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return errors.Join(err, f.Close())
		}
		defer func() {
			pprof.StopCPUProfile()
			if cerr := f.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}()
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	if *memFile != "" && !*once {
		defer onHeapSignal(*memFile, log)()
	}
	v, err := vault.Open(root, vault.Options{Logger: log, ConfigFile: *configFile, Flags: flags})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := v.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if *once {
		start := time.Now()
		sum, err := v.Once(ctx, vault.OnceOptions{})
		if err != nil {
			return err
		}
		log.Info("once finished", "ran", sum.Ran, "failed", sum.Failed, "took", time.Since(start))
		if *memFile != "" {
			return writeHeap(*memFile)
		}
		return nil
	}
	return v.Watch(ctx, vault.WatchOptions{})
}

// writeHeap writes a heap profile of this moment (after a GC) to path.
func writeHeap(path string) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	runtime.GC()
	return pprof.Lookup("heap").WriteTo(f, 0)
}

// InProcess starts a CPU profile of this process into dir; stop
// ends it and writes a heap profile beside it.
func InProcess(dir string) (stop func() error, err error) {
	f, err := os.Create(filepath.Join(dir, "knotbench.cpu.pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, fmt.Errorf("cpu profile: %w (and %v)", err, f.Close())
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return err
		}
		return writeHeap(filepath.Join(dir, "knotbench.heap.pprof"))
	}, nil
}

// Top returns the head of go tool pprof -top for profiles, merged.
func Top(ctx context.Context, profiles []string) (string, error) {
	args := append([]string{"tool", "pprof", "-top", "-nodecount=25"}, profiles...)
	out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, out)
	}
	// Drop pprof's preamble lines about the binary's path.
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "Duration:") || strings.HasPrefix(l, "Type:") {
			return strings.Join(lines[i:], "\n"), nil
		}
	}
	return string(out), nil
}
