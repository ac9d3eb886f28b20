package vault

import (
	"io/fs"
	"sync"

	"github.com/knotd/knotd/internal/state"
)

// ownWrites are knotd's own writes into strands (knot_session) whose
// work is under way: the stamp of the file each left. The watcher sees
// such a write as it sees any; while the strand still is as knotd left it,
// there is nothing to run (the work under way runs the version knotd
// wrote), and it is not submitted, so that status shows no follow-up that
// will never run. A save after knotd's write changes the stamp and is
// submitted as always; and the work under way looks again at the end
// (the pipeline's movedOn) in any case. The entry is dropped when the work is done: the
// strand's record then holds the write.
type ownWrites struct {
	mu sync.Mutex
	m  map[string]state.Stamp
}

func (o *ownWrites) wrote(rel string, st state.Stamp) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = make(map[string]state.Stamp)
	}
	o.m[rel] = st
}

func (o *ownWrites) forget(rel string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, rel)
}

// is reports whether info, the strand rel as it is now, is knotd's own
// write of it.
func (o *ownWrites) is(rel string, info fs.FileInfo) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	st, ok := o.m[rel]
	return ok && info != nil && state.StampOf(info) == st
}
