package cli_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/parleyhq/parley/internal/daemon"
)

// loseFirstAnswer puts a proxy before d that passes the first POST to path
// on to the daemon and then cuts the connection before its answer (the
// daemon has made what it asked; the caller never hears so), and passes
// everything else. It returns a data directory whose addr and token lead
// the CLI to d through the proxy (as it finds the local parley), and the
// count of POSTs to path.
func loseFirstAnswer(t *testing.T, d *daemon.Daemon, path string) (data string, posts *atomic.Int32) {
	t.Helper()
	target, _ := url.Parse("http://" + d.Addr())
	pass := httputil.NewSingleHostReverseProxy(target)
	posts = new(atomic.Int32)
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != path || posts.Add(1) > 1 {
			pass.ServeHTTP(w, req)
			return
		}
		body, _ := io.ReadAll(req.Body)
		fwd, _ := http.NewRequest(req.Method, target.String()+req.URL.Path, bytes.NewReader(body))
		fwd.Header = req.Header.Clone()
		resp, err := http.DefaultClient.Do(fwd)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("the first POST %s at the daemon: %v %v", path, resp, err)
		} else {
			resp.Body.Close()
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	}))
	t.Cleanup(cut.Close)
	data = t.TempDir()
	for name, v := range map[string]string{"addr": strings.TrimPrefix(cut.URL, "http://"), "token": d.Token()} {
		if err := os.WriteFile(filepath.Join(data, name), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return data, posts
}
