package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/parleyhq/parley/internal/config"
)

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// newPageServer is the web channel with what the login page and the directory
// completion use: the token, the roots and a bundle. Neither reaches the router.
func newPageServer(t *testing.T, roots []string) *httptest.Server {
	t.Helper()
	bundle := fstest.MapFS{"index.html": {Data: []byte("<!doctype html><title>dashboard</title>")}}
	s := New(nil, nil, nil, Options{Token: testToken, Roots: roots, UI: bundle, Limits: config.Limits{MaxMessageBytes: 1 << 20}})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv
}

func noRedirect() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// The login link sets a cookie that page scripts cannot read, that other sites
// cannot make the browser send, and that covers the API and the socket.
func TestLoginCookieIsHttpOnlyStrictAndSiteWide(t *testing.T) {
	srv := newPageServer(t, []string{t.TempDir()})
	resp, err := noRedirect().Get(srv.URL + "/?token=" + testToken + "&x=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login link: got %d, want 303 to the page without the token", resp.StatusCode)
	}
	if loc := resp.Header.Get("Location"); loc != "/?x=1" {
		t.Errorf("redirect to %q, want /?x=1 (the token gone, the rest kept)", loc)
	}
	var c *http.Cookie
	for _, k := range resp.Cookies() {
		if k.Name == CookieName {
			c = k
		}
	}
	if c == nil {
		t.Fatalf("no %s cookie in %v", CookieName, resp.Header.Values("Set-Cookie"))
	}
	if !c.HttpOnly {
		t.Error("cookie is not HttpOnly: page scripts could read the token")
	}
	if c.SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie SameSite = %v, want Strict", c.SameSite)
	}
	if c.Path != "/" {
		t.Errorf("cookie Path = %q, want /", c.Path)
	}
	if c.Value != testToken {
		t.Errorf("cookie value %q, want the token", c.Value)
	}

	// The cookie signs the page in; a wrong token gets the login page only.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: CookieName, Value: testToken})
	ok, err := noRedirect().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ok.Body.Close()
	if ok.StatusCode != http.StatusOK {
		t.Errorf("page with the cookie: got %d, want 200", ok.StatusCode)
	}
	bad, err := noRedirect().Get(srv.URL + "/?token=wrong")
	if err != nil {
		t.Fatal(err)
	}
	bad.Body.Close()
	if bad.StatusCode != http.StatusUnauthorized || len(bad.Cookies()) != 0 {
		t.Errorf("wrong token: got %d with cookies %v, want 401 and none", bad.StatusCode, bad.Cookies())
	}
}

// Directory completion lists directories inside the roots and nothing outside,
// whether asked directly, through "..", or through a symlink out of a root.
func TestCompleteRefusesPathsOutsideTheRoots(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "proj"), filepath.Join(root, "pkg"), filepath.Join(outside, "secret")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	srv := newPageServer(t, []string{realRoot})
	complete := func(path string, token string) (int, []string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/fs/complete?path="+url.QueryEscape(path), nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v struct {
			Dirs []string `json:"dirs"`
		}
		json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v.Dirs
	}

	if code, dirs := complete(realRoot+"/p", testToken); code != http.StatusOK || !slices.Equal(dirs, []string{filepath.Join(realRoot, "pkg"), filepath.Join(realRoot, "proj")}) {
		t.Fatalf("inside the root: got %d %v, want pkg and proj", code, dirs)
	}
	for _, p := range []string{
		outside + "/",
		outside + "/s",
		realRoot + "/../outside/",
		realRoot + "/escape/",
		realRoot + "/escape/s",
		"/",
		"/etc/",
		"relative/",
	} {
		code, dirs := complete(p, testToken)
		if code != http.StatusOK || len(dirs) != 0 {
			t.Errorf("complete %q: got %d %v, want 200 and no directories", p, code, dirs)
		}
	}
	if code, dirs := complete(realRoot+"/", ""); code != http.StatusUnauthorized || len(dirs) != 0 {
		t.Errorf("without the token: got %d %v, want 401 and nothing", code, dirs)
	}
}
