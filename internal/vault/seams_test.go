package vault

import (
	"github.com/knotd/knotd/internal/scheduler"
	"github.com/knotd/knotd/internal/watcher"
)

// probe is the tests' observer and faults (seams.go): each field, when
// set, is called at its point; nil fields do nothing. Set the fields
// before Once or Watch starts.
type probe struct {
	scheduledFn  func(*scheduler.Scheduler[Job])
	reconciledFn func(hints []watcher.Hint, submitted []string)
	workedFn     func(rel string, rep RunReport)
	loopedFn     func(waiting int)
	releasedFn   func()
	journaledFn  func(runID string)
	completedFn  func(runID string)
	openingFn    func(rel string) error
	syncingFn    func(dir string) error
	journalingFn func(runID string) error
	appendingFn  func(runID string) error
	completingFn func(runID string) error
}

// probeOf returns v's probe, installing one first.
func probeOf(v *Vault) *probe {
	if p, ok := v.observe.(*probe); ok {
		return p
	}
	p := &probe{}
	v.observe, v.faults = p, p
	return p
}

func (p *probe) scheduled(s *scheduler.Scheduler[Job]) {
	if p.scheduledFn != nil {
		p.scheduledFn(s)
	}
}

func (p *probe) reconciled(hints []watcher.Hint, submitted []string) {
	if p.reconciledFn != nil {
		p.reconciledFn(hints, submitted)
	}
}

func (p *probe) worked(rel string, rep RunReport) {
	if p.workedFn != nil {
		p.workedFn(rel, rep)
	}
}

func (p *probe) looped(waiting int) {
	if p.loopedFn != nil {
		p.loopedFn(waiting)
	}
}

func (p *probe) released() {
	if p.releasedFn != nil {
		p.releasedFn()
	}
}

func (p *probe) journaled(runID string) {
	if p.journaledFn != nil {
		p.journaledFn(runID)
	}
}

func (p *probe) completed(runID string) {
	if p.completedFn != nil {
		p.completedFn(runID)
	}
}

func (p *probe) opening(rel string) error   { return call(p.openingFn, rel) }
func (p *probe) syncing(dir string) error   { return call(p.syncingFn, dir) }
func (p *probe) journaling(id string) error { return call(p.journalingFn, id) }
func (p *probe) appending(id string) error  { return call(p.appendingFn, id) }
func (p *probe) completing(id string) error { return call(p.completingFn, id) }

func call(fn func(string) error, arg string) error {
	if fn == nil {
		return nil
	}
	return fn(arg)
}
