package vault

import (
	"io/fs"
	"log/slog"
	"os"

	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/vaultfs"
)

// reconHost is what the reconciler (package vault/internal/reconcile)
// asks of the vault: its logger and notices, the state store and the
// configuration in force, strands read inside the vault, the claims on
// strands, and the pipeline's tie-offs and writes into notes, read each
// time (the store is opened after the reconciler is made).
type reconHost struct{ v *Vault }

func (h reconHost) Log() *slog.Logger { return h.v.log }
func (h reconHost) WarnOnce(path, msg string, args ...any) {
	h.v.warnOnce(path, msg, args...)
}
func (h reconHost) NoticeOnce(key string, say func()) { h.v.noticeOnce(key, say) }
func (h reconHost) Dry() bool                         { return h.v.dry }
func (h reconHost) Store() *state.Store               { return h.v.store }
func (h reconHost) MaxStrandSize() int64              { return h.v.config().MaxStrandSize }
func (h reconHost) OpenStrand(rel string) (*os.File, fs.FileInfo, error) {
	return h.v.openStrand(rel)
}
func (h reconHost) ReadStrand(rel string, limit int64) ([]byte, bool, error) {
	content, _, _, tooBig, err := h.v.readStrand(rel, limit)
	return content, tooBig, err
}
func (h reconHost) TryClaim(rel string) bool           { return h.v.claims.tryClaim(rel) }
func (h reconHost) Release(rel string)                 { h.v.claims.release(rel) }
func (h reconHost) WaitingFor(t string) (string, bool) { return h.v.pipe.WaitingFor(t) }
func (h reconHost) UnwritableTieOff(t string, err error) bool {
	return h.v.pipe.UnwritableTieOff(t, err)
}
func (h reconHost) Rescue(rel string, content []byte) (string, error) {
	return h.v.pipe.Rescue(rel, content)
}
func (h reconHost) SettleGuard(rel string, g *vaultfs.Guard) { h.v.pipe.SettleGuard(rel, g) }
