//go:build !unix

package main

import (
	"log/slog"
	"os"
)

// sigHeap is nil where there is no user signal: no heap snapshots.
var sigHeap os.Signal

func onHeapSignal(string, *slog.Logger) (stop func()) { return func() {} }
