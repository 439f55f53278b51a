package web

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/config"
)

// pageServerWith is the web channel with its own token and devices, as a
// second parley on the same host has.
func pageServerWith(t *testing.T, token string, devs *auth.Devices) *httptest.Server {
	t.Helper()
	bundle := fstest.MapFS{"index.html": {Data: []byte("<!doctype html><title>dashboard</title>")}}
	srv := httptest.NewServer(New(nil, nil, nil, Options{Token: token, Devices: devs, UI: bundle, Limits: config.Limits{MaxMessageBytes: 1 << 20}}))
	t.Cleanup(srv.Close)
	return srv
}

// signInWith opens a fresh login link of srv (minted with token) in c.
func signInWith(t *testing.T, c *http.Client, srv *httptest.Server, token string) {
	t.Helper()
	var out struct{ Code string }
	if st := postJSON(t, srv.URL+"/api/login-codes", token, nil, &out); st != http.StatusOK {
		t.Fatalf("login code: %d", st)
	}
	resp, err := c.Get(srv.URL + LoginPath(out.Code))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login link: %d", resp.StatusCode)
	}
}

func getWith(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Two parleys on one host (a hub and a node, or two data directories) on
// different ports: a browser keeps cookies per host, not per port, so signing
// in to the second must not sign it out of the first.
func TestTwoParleysOnOneHostKeepTheirOwnSessions(t *testing.T) {
	const other = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	a, b := pageServerWith(t, testToken, nil), pageServerWith(t, other, nil)
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	signInWith(t, browser, a, testToken)
	signInWith(t, browser, b, other)
	for name, srv := range map[string]*httptest.Server{"first": a, "second": b} {
		if st, _ := getWith(t, browser, srv.URL+"/api/version"); st != http.StatusOK {
			t.Errorf("the %s parley after signing in to both: %d, want 200 (still signed in)", name, st)
		}
	}
}

// A browser signed in before the cookie was named per instance stays signed
// in: its old cookie is read, and moved to this instance's name.
func TestTheOldSessionCookieStillWorksAndMoves(t *testing.T) {
	devs, _ := auth.OpenDevices("")
	id, _, err := devs.Create("old browser", auth.KindBrowser)
	if err != nil {
		t.Fatal(err)
	}
	srv := pageServerWith(t, testToken, devs)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: CookieName, Value: id})
	resp, err := noRedirect().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the page with the old cookie: %d, want 200", resp.StatusCode)
	}
	moved, cleared := false, false
	for _, k := range resp.Cookies() {
		moved = moved || (k.Name == SessionCookie(testToken) && k.Value == id && k.MaxAge > 0)
		cleared = cleared || (k.Name == CookieName && k.MaxAge < 0)
	}
	if !moved || !cleared {
		t.Errorf("cookies set: %v; want the session under %s and the old one cleared", resp.Header.Values("Set-Cookie"), SessionCookie(testToken))
	}
	if st := status(t, srv, "/api/version", &http.Cookie{Name: SessionCookie(testToken), Value: id}); st != http.StatusOK {
		t.Errorf("the moved cookie: %d, want 200", st)
	}
}

// A phone revoked from another device opens the dashboard and is told it was
// signed out and how to pair again, not only asked for a token it never had.
// A browser that was never signed in sees the plain sign-in page.
func TestARevokedDeviceIsToldItWasSignedOut(t *testing.T) {
	devs, _ := auth.OpenDevices("")
	srv := pageServerWith(t, testToken, devs)
	jar, _ := cookiejar.New(nil)
	phone := &http.Client{Jar: jar}
	signInWith(t, phone, srv, testToken)
	list := devs.List()
	if len(list) != 1 {
		t.Fatalf("devices: %+v", list)
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/api/devices/"+list[0].ID, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
	st, page := getWith(t, phone, srv.URL+"/")
	if st != http.StatusUnauthorized || !strings.Contains(page, "This device was signed out") || !strings.Contains(page, "Add a device") {
		t.Errorf("the revoked phone's page: %d\n%s\nwant 401 saying it was signed out and how to pair again", st, page)
	}
	st, page = getWith(t, &http.Client{}, srv.URL+"/")
	if st != http.StatusUnauthorized || strings.Contains(page, "signed out") || !strings.Contains(page, `action="/login"`) {
		t.Errorf("a new visitor's page: %d\n%s\nwant the plain sign-in page", st, page)
	}
}
