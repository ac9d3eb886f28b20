package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/device"
	"github.com/stretchr/testify/require"
)

// TestOnce_StandbySaysWhatToDo: a pass on a device that stands by says
// which device answers and what makes this one answer instead: under
// runner: that is the config, not --take-over, which cannot override it.
// When the answering device has this machine's name and is stopped (this
// machine before its state directory was lost), the pass says on stderr
// that nobody may answer the vault, and how to take it over.
func TestOnce_StandbySaysWhatToDo(t *testing.T) {
	host, err := os.Hostname()
	require.NoError(t, err)
	host = strings.TrimSpace(host)
	tests := []struct {
		name, config, peer string
		running            bool
		args               []string
		out, notOut        []string
		errOut             string // "": not that nobody may answer
	}{
		{name: "another device answers", peer: "other-desk-7f", running: true,
			out: []string{"other-desk-7f (aaaaaaaa) answers this vault", "To answer from here: knotd --take-over on this device"}},
		{name: "runner names another device", peer: "other-desk-7f", running: true, config: "runner: other-desk-7f\n",
			out:    []string{"other-desk-7f (aaaaaaaa) answers this vault", "set runner: " + host + " in .knot/config.yaml", "--take-over cannot override runner:"},
			notOut: []string{"knotd --take-over answers", "--take-over on this device"}},
		{name: "--take-over under runner", peer: "other-desk-7f", running: true, config: "runner: other-desk-7f\n", args: []string{"--take-over"},
			out: []string{"--take-over cannot override runner:"}, notOut: []string{"ran 1"}, errOut: "--take-over cannot make this device answer: the vault config names"},
		{name: "this machine's old identity, stopped", peer: host,
			out:    []string{"answers this vault"},
			errOut: "knotd --once: nobody may answer this vault: " + host + " (aaaaaaaa), which answers this vault, has this machine's name and has been stopped since"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, _ := setup(t)
			if tt.config != "" {
				writeFile(t, filepath.Join(v, ".knot", "config.yaml"), tt.config)
			}
			root, err := os.OpenRoot(v)
			require.NoError(t, err)
			defer root.Close()
			now := time.Now().UTC()
			require.NoError(t, device.Write(root, device.Heartbeat{
				Device: "aaaaaaaa-0000-4000-8000-000000000001", Name: tt.peer,
				Claim: now.Add(-time.Hour), Gen: 1, Beat: now, Running: tt.running,
			}, false))
			knotd(t, "--once", v) // first contact
			writeFile(t, filepath.Join(v, "n.md"), "# N\n")
			code, out, errOut := knotd(t, append(append([]string{"--once"}, tt.args...), v)...)
			if code != exitOK {
				t.Errorf("exit %d; want 0 (a pass that stands by is no failure)", code)
			}
			for _, s := range tt.out {
				if !strings.Contains(out, s) {
					t.Errorf("stdout does not say %q:\n%s", s, out)
				}
			}
			for _, s := range tt.notOut {
				if strings.Contains(out, s) {
					t.Errorf("stdout says %q:\n%s", s, out)
				}
			}
			if !strings.Contains(errOut, tt.errOut) || tt.peer != host && strings.Contains(errOut, "nobody may answer") {
				t.Errorf("stderr = %q; want %q", errOut, tt.errOut)
			}
			if tt.peer == host && !strings.Contains(errOut, "run knotd --take-over here") {
				t.Errorf("stderr = %q; want it to say how to answer", errOut)
			}
		})
	}
}
