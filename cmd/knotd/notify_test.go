package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRun_OnceNotifies: knotd --once with notify: url tells an ntfy
// stand-in on loopback of a failed run, once, before it exits; a later
// pass with nothing new tells nothing; a server that refuses is logged and
// changes nothing of the pass (exit 1 for the failed run, not an error).
func TestRun_OnceNotifies(t *testing.T) {
	for _, status := range []int{http.StatusOK, http.StatusInternalServerError} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			var mu sync.Mutex
			var posts []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body) // a short body; an error leaves it shorter, which the test sees
				mu.Lock()
				posts = append(posts, r.Header.Get("Title")+" | "+r.Header.Get("Authorization")+" | "+string(b))
				mu.Unlock()
				w.WriteHeader(status)
			}))
			defer srv.Close()
			got := func() []string {
				mu.Lock()
				defer mu.Unlock()
				return append([]string(nil), posts...)
			}
			v, configDir := setup(t)
			failingAgentConfig(t, configDir)
			cfg, err := os.ReadFile(filepath.Join(configDir, "config.yaml"))
			require.NoError(t, err)
			writeFile(t, filepath.Join(configDir, "config.yaml"), string(cfg)+"notify:\n  url: "+srv.URL+"/knotd\n  token_env: KNOTD_TEST_NTFY_TOKEN\n")
			t.Setenv("KNOTD_TEST_NTFY_TOKEN", "tk_test")

			code, _, _ := knotd(t, "--once", v) // adopt
			require.Equal(t, exitOK, code)
			writeFile(t, filepath.Join(v, "a.md"), "# A\n")
			code, _, errOut := knotd(t, "--once", v)
			require.Equal(t, exitFailed, code, errOut)
			p := got()
			require.Len(t, p, 1, "one failed run, one notification; log:\n%s", errOut)
			require.True(t, strings.HasPrefix(p[0], "knotd: a run failed: a.md"), p[0])
			require.Contains(t, p[0], "| Bearer tk_test |")
			require.Contains(t, p[0], "it broke")
			if status != http.StatusOK {
				require.Contains(t, errOut, "cannot notify")
				require.Contains(t, errOut, "500 Internal Server Error")
			} else {
				require.NotContains(t, errOut, "cannot notify")
			}

			code, _, errOut = knotd(t, "--once", v)
			require.Equal(t, exitOK, code, errOut)
			require.Len(t, got(), 1, "nothing new, nothing told")
		})
	}
}
