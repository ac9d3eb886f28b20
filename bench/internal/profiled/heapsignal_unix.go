//go:build unix

package profiled

import (
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/knotd/knotd/bench/internal/knotdlog"
)

// HeapSignal asks knotd-profiled for a heap profile of the moment.
var HeapSignal os.Signal = syscall.SIGUSR1

// onHeapSignal writes a heap profile to path (replacing the previous one)
// each time the process receives HeapSignal, and logs knotdlog.MsgHeap when it has.
// stop ends the goroutine it starts and waits for it.
func onHeapSignal(path string, log *slog.Logger) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, HeapSignal)
	var wg sync.WaitGroup
	wg.Go(func() {
		for range ch {
			if err := writeHeap(path); err != nil {
				log.Error("heap profile", "err", err)
				continue
			}
			log.Info(knotdlog.MsgHeap, "file", path)
		}
	})
	return func() {
		signal.Stop(ch)
		close(ch)
		wg.Wait()
	}
}
