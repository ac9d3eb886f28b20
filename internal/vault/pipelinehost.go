package vault

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/statedir"
	"github.com/knotd/knotd/internal/vault/internal/budget"
	"github.com/knotd/knotd/internal/vault/internal/pipeline"
	"github.com/knotd/knotd/internal/vault/internal/reconcile"
)

// The pipeline of one strand's change (look, decide, prepare, run,
// record) is package vault/internal/pipeline; these are its types the
// vault's API names.
type (
	// AgentRunner runs one agent invocation (see pipeline.AgentRunner).
	AgentRunner = pipeline.AgentRunner
	// Job is what the scheduler hands the processor for one strand
	// (see pipeline.Job).
	Job = pipeline.Job
	// RunReport is what processing one strand did (see
	// pipeline.RunReport).
	RunReport = pipeline.RunReport
)

// pipelineHost is what the pipeline asks of the vault (pipeline.Host),
// read each time: the state store, state folder and answering device are
// known only once open has made them, the configuration is replaced on
// reload, and tests replace the clock, logger and seams.
type pipelineHost struct{ v *Vault }

var _ pipeline.Host = pipelineHost{}

func (h pipelineHost) Root() string                           { return h.v.root }
func (h pipelineHost) FS() *os.Root                           { return h.v.fs }
func (h pipelineHost) Folder() statedir.Folder                { return h.v.folder }
func (h pipelineHost) Config() *config.Config                 { return h.v.config() }
func (h pipelineHost) Store() *state.Store                    { return h.v.store }
func (h pipelineHost) Dry() bool                              { return h.v.dry }
func (h pipelineHost) Watching() bool                         { return h.v.watching.Load() }
func (h pipelineHost) Budget() *budget.Budget                 { return h.v.budget }
func (h pipelineHost) Now() time.Time                         { return h.v.now() }
func (h pipelineHost) Log() *slog.Logger                      { return h.v.log }
func (h pipelineHost) WarnOnce(path, msg string, args ...any) { h.v.warnOnce(path, msg, args...) }
func (h pipelineHost) NoticeOnce(key string, say func())      { h.v.noticeOnce(key, say) }

func (h pipelineHost) ReadStrand(rel string, limit int64) ([]byte, state.Hash, os.FileInfo, bool, error) {
	return h.v.readStrand(rel, limit)
}

func (h pipelineHost) LstatStrand(rel string) (fs.FileInfo, pipeline.Presence, error) {
	info, where, err := h.v.recon.LstatStrand(rel)
	switch where {
	case reconcile.Present:
		return info, pipeline.Present, err
	case reconcile.Ignored:
		return info, pipeline.Ignored, err
	}
	return info, pipeline.Absent, err
}

func (h pipelineHost) SameContent(rel string, hash state.Hash) (bool, error) {
	return h.v.recon.SameContent(rel, hash)
}
func (h pipelineHost) Stamp(info fs.FileInfo) state.Stamp { return reconcile.Stamp(info) }
func (h pipelineHost) Fold(rel string)                    { h.v.recon.Fold(rel) }

// Move moves the record of a strand that moved from from to to, which
// the pipeline holds (it is processing it).
func (h pipelineHost) Move(from, to string) (bool, error) { return h.v.recon.Move(from, to, true) }
func (h pipelineHost) ScopeOf(rel string) config.Scope    { return h.v.scopeOf(rel) }
func (h pipelineHost) ScopedAgent(name string, sc config.Scope) (string, agentrun.Agent, error) {
	return h.v.scopedAgent(name, sc)
}
func (h pipelineHost) OwnWrote(rel string, st state.Stamp) { h.v.own.wrote(rel, st) }

func (h pipelineHost) Claim(rel string)                             { h.v.claims.claim(rel) }
func (h pipelineHost) Release(rel string)                           { h.v.claims.release(rel) }
func (h pipelineHost) Started(r control.Running)                    { h.v.active.Start(r) }
func (h pipelineHost) Done(rel string)                              { h.v.active.Done(rel) }
func (h pipelineHost) AnswersHold(ctx context.Context) bool         { return h.v.answering.AnswersHold(ctx) }
func (h pipelineHost) NewAgentFS(a agentrun.Agent) pipeline.AgentFS { return h.v.newAgentFS(a) }
func (h pipelineHost) Runner() AgentRunner                          { return h.v.runAgent() }

func (h pipelineHost) Journaled(runID string)        { h.v.observe.journaled(runID) }
func (h pipelineHost) Completed(runID string)        { h.v.observe.completed(runID) }
func (h pipelineHost) Syncing(dir string) error      { return h.v.faults.syncing(dir) }
func (h pipelineHost) Journaling(runID string) error { return h.v.faults.journaling(runID) }
func (h pipelineHost) Appending(runID string) error  { return h.v.faults.appending(runID) }
func (h pipelineHost) Completing(runID string) error { return h.v.faults.completing(runID) }
