package vault

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
)

// logBuffer is a log destination tests can read while knotd writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// onceLogged is onceFresh with knotd's log captured.
func (e *env) onceLogged() (Summary, string) {
	e.t.Helper()
	var log logBuffer
	opts := e.options()
	opts.Logger = slog.New(slog.NewTextHandler(&log, nil))
	v, err := Open(e.root, opts)
	if err != nil {
		e.t.Fatalf("Open: %v", err)
	}
	sum, err := v.Once(context.Background(), OnceOptions{})
	if cerr := v.Close(); cerr != nil {
		e.t.Fatalf("Close: %v", cerr)
	}
	if err != nil {
		e.t.Fatalf("Once: %v", err)
	}
	return sum, log.String()
}
