package vault

import (
	"context"
	"strings"

	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/notify"
	"github.com/knotd/knotd/internal/vault/internal/pipeline"
)

// Notifier is told, as it happens, what the user should hear of without
// looking (docs/operating.md#notifications): a run that failed, a note
// knotd paused (a breaker, the budget), a question that waits. Notify
// must not block: package notify's Notifier queues, sends each event once
// and coalesces a storm.
type Notifier interface {
	Notify(e notify.Event)
}

// NotifyConfig is where the configuration loaded at Open says knotd
// notifies (the notifier is built with it as knotd starts).
func (v *Vault) NotifyConfig() config.Notify { return v.config().Notify }

// SetNotifier makes n the vault's notifier (Options.Notifier), before
// Once or Watch starts.
func (v *Vault) SetNotifier(n Notifier) { v.notifier = n }

// tell gives e to the notifier, if any; a dry run tells nothing.
func (v *Vault) tell(e notify.Event) {
	if v.notifier == nil || v.dry {
		return
	}
	v.notifier.Notify(e)
}

// tellWorked tells what the work on the strand rel did that the user
// should hear of: its run failed (recorded in a failure section, or knotd
// could not process it: err), or its change waits for the day's budget.
// A run that knotd's stop ended is no failure (its change runs at the
// next start).
func (v *Vault) tellWorked(ctx context.Context, rel string, rep RunReport, err error) {
	now := v.now()
	switch {
	case err != nil && ctx.Err() == nil:
		v.tell(notify.Failed(v.root, rel, "", "knotd cannot process the note: "+err.Error(), now))
	case err == nil && rep.Failed():
		v.tell(notify.Failed(v.root, rel, rep.RunID, rep.Reason, now))
	case strings.HasPrefix(rep.Skipped, pipeline.BudgetSkip):
		why := strings.TrimPrefix(rep.Skipped, pipeline.BudgetSkip)
		// Once a day per cap, as the log says it: the vault's cap once,
		// a note's cap once for each note.
		limit, _, _ := strings.Cut(why, " is spent")
		id := "budget/" + now.UTC().Format("2006-01-02") + "/" + limit
		if !strings.HasPrefix(limit, "the vault's") {
			id += "/" + rel
		}
		v.tell(notify.Paused(v.root, rel, id, "its change waits: "+why,
			"It runs when the budget allows (tomorrow, UTC), or now with knotd run "+rel, now))
	}
}
