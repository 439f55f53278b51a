package web

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// mintCode asks for a one-time login code as `parley login-link` does.
func mintCode(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/login-codes", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Code, Path string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || out.Path != "/login?code="+out.Code {
		t.Fatalf("login code: %d %+v %v", resp.StatusCode, out, err)
	}
	return out.Code
}

func sessionCookie(resp *http.Response) *http.Cookie {
	for _, k := range resp.Cookies() {
		if k.Name == SessionCookie(testToken) && k.MaxAge > 0 {
			return k
		}
	}
	return nil
}

// status GETs path with the cookie and returns the status.
func status(t *testing.T, srv *httptest.Server, path string, c *http.Cookie) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if c != nil {
		req.AddCookie(c)
	}
	resp, err := noRedirect().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A login code signs a browser in once, with a session cookie that is not the
// token: HttpOnly, SameSite=Strict, site-wide, for 30 days; the redirect leaves
// no code in the address bar. A second use is refused.
func TestLoginCodeSignsInOnceWithASessionCookie(t *testing.T) {
	t.Parallel()
	srv := newPageServer(t, []string{t.TempDir()})
	code := mintCode(t, srv)
	resp, err := noRedirect().Get(srv.URL + "/login?code=" + code)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("login link: %d to %q, want 303 to /", resp.StatusCode, resp.Header.Get("Location"))
	}
	c := sessionCookie(resp)
	switch {
	case c == nil:
		t.Fatalf("no %s cookie in %v", SessionCookie(testToken), resp.Header.Values("Set-Cookie"))
	case !c.HttpOnly:
		t.Error("cookie is not HttpOnly: page scripts could read it")
	case c.SameSite != http.SameSiteStrictMode:
		t.Errorf("cookie SameSite = %v, want Strict", c.SameSite)
	case c.Path != "/":
		t.Errorf("cookie Path = %q, want /", c.Path)
	case c.Value == testToken || strings.Contains(c.Value, testToken) || c.Value == code:
		t.Errorf("cookie holds the token or the code: %q", c.Value)
	case c.MaxAge != 30*24*3600:
		t.Errorf("cookie MaxAge %d, want 30 days", c.MaxAge)
	}
	if got := status(t, srv, "/", c); got != http.StatusOK {
		t.Errorf("page with the session: %d, want 200", got)
	}
	if got := status(t, srv, "/api/version", c); got != http.StatusOK {
		t.Errorf("API with the session: %d, want 200", got)
	}
	again, err := noRedirect().Get(srv.URL + "/login?code=" + code)
	if err != nil {
		t.Fatal(err)
	}
	again.Body.Close()
	if again.StatusCode != http.StatusUnauthorized || sessionCookie(again) != nil {
		t.Errorf("the code's second use: %d, cookie %v; want 401 and none", again.StatusCode, sessionCookie(again))
	}
	if got := status(t, srv, "/api/version", &http.Cookie{Name: CookieName, Value: testToken}); got != http.StatusUnauthorized {
		t.Errorf("the token as the cookie: %d, want 401 (the cookie holds sessions only)", got)
	}
}

// The sign-in form POSTs the token (nothing lands in a URL); a wrong token gets
// the form again. A link carrying the token is not accepted: it is redirected
// without it and signs nobody in.
func TestSignInFormPostsAndTokenLinksAreRefused(t *testing.T) {
	t.Parallel()
	srv := newPageServer(t, []string{t.TempDir()})
	resp, err := noRedirect().Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(page), `<form method="post" action="/login">`) {
		t.Fatalf("sign-in page: %d, want 401 and a POST form:\n%s", resp.StatusCode, page)
	}
	post := func(token string) *http.Response {
		resp, err := noRedirect().PostForm(srv.URL+"/login", url.Values{"token": {token}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := post("wrong"); r.StatusCode != http.StatusUnauthorized || sessionCookie(r) != nil {
		t.Errorf("wrong token: %d, want 401 and no cookie", r.StatusCode)
	}
	r := post(testToken)
	if c := sessionCookie(r); r.StatusCode != http.StatusSeeOther || c == nil || c.Value == testToken {
		t.Fatalf("token form: %d cookie %v, want 303 and a session cookie", r.StatusCode, c)
	}
	link, err := noRedirect().Get(srv.URL + "/?token=" + testToken)
	if err != nil {
		t.Fatal(err)
	}
	link.Body.Close()
	if link.StatusCode != http.StatusSeeOther || link.Header.Get("Location") != "/" || sessionCookie(link) != nil {
		t.Errorf("?token= link: %d to %q, cookie %v; want 303 to / and no session", link.StatusCode, link.Header.Get("Location"), sessionCookie(link))
	}
}

// Signing out ends the session on the server: the old cookie gets 401.
func TestSignOutRevokesTheSession(t *testing.T) {
	t.Parallel()
	srv := newPageServer(t, []string{t.TempDir()})
	resp, err := noRedirect().Get(srv.URL + "/login?code=" + mintCode(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c := sessionCookie(resp)
	if c == nil {
		t.Fatal("no session")
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/logout", nil)
	req.Header.Set("Origin", srv.URL)
	req.AddCookie(c)
	out, err := noRedirect().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out.Body.Close()
	cleared := false
	for _, k := range out.Cookies() {
		cleared = cleared || (k.Name == SessionCookie(testToken) && k.MaxAge < 0)
	}
	if out.StatusCode != http.StatusSeeOther || !cleared {
		t.Fatalf("sign-out: %d, cookies %v; want 303 and the cookie cleared", out.StatusCode, out.Cookies())
	}
	for _, p := range []string{"/api/version", "/"} {
		if got := status(t, srv, p, c); got != http.StatusUnauthorized {
			t.Errorf("%s with the signed-out cookie: %d, want 401", p, got)
		}
	}
}

// Directory completion lists directories inside the roots and nothing outside,
// whether asked directly, through "..", or through a symlink out of a root.
func TestCompleteRefusesPathsOutsideTheRoots(t *testing.T) {
	t.Parallel()
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
