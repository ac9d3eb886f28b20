package vault

import (
	"context"
	"log/slog"

	"github.com/knotd/knotd/internal/testutil"
)

// onceLogged is onceFresh with knotd's log captured.
func (e *env) onceLogged() (Summary, string) {
	e.t.Helper()
	var log testutil.Buffer
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
