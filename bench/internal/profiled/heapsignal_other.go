//go:build !unix

package profiled

import (
	"log/slog"
	"os"
)

// HeapSignal is nil where there is no user signal: no heap snapshots.
var HeapSignal os.Signal

func onHeapSignal(string, *slog.Logger) (stop func()) { return func() {} }
