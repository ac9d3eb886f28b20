package vault

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// heapFree returns the heap memory the Go runtime holds free but has not
// returned to the operating system, and the memory it has returned, in
// bytes (runtime/metrics).
func heapFree(t *testing.T) (free, released uint64) {
	t.Helper()
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	for _, m := range s {
		if m.Value.Kind() != metrics.KindUint64 {
			t.Fatalf("runtime/metrics has no %s", m.Name)
		}
	}
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// sink keeps the test's allocations live until the test drops them.
var sink [][]byte

// TestRuntime_KeepsFreedHeapUntilFreeOSMemory fails when the Go runtime
// changes the behaviour releaseMemory's debug.FreeOSMemory is there for: a
// garbage collection frees the heap a pass over the vault used (64 MiB
// here), but the runtime keeps it resident and returns it to the system
// only gradually (in the bench, 44 MiB of anonymous memory 12 s after
// start-up at 100k strands without the call, against 13 MiB with it).
// If the runtime starts returning freed heap at once, drop the call; if
// FreeOSMemory stops returning it, releaseMemory no longer works.
func TestRuntime_KeepsFreedHeapUntilFreeOSMemory(t *testing.T) {
	const chunk, total = 1 << 20, 64 << 20
	debug.FreeOSMemory()
	for range total / chunk {
		b := make([]byte, chunk)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1 // resident, not only reserved
		}
		sink = append(sink, b)
	}
	sink = nil
	runtime.GC()
	free, released := heapFree(t)
	if free < total/2 {
		t.Errorf("after a garbage collection the runtime holds %d MiB of freed heap, of %d MiB freed: it returns freed memory by itself now, and releaseMemory's FreeOSMemory may be dropped", free>>20, total>>20)
	}
	debug.FreeOSMemory()
	free2, released2 := heapFree(t)
	if released2 < released+total/2 || free2 > free/4 {
		t.Errorf("FreeOSMemory returned %d MiB and left %d MiB of free heap (of %d MiB); want most of it returned", (released2-released)>>20, free2>>20, free>>20)
	}
}
