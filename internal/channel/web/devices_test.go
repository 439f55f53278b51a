package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/config"
)

func postJSON(t *testing.T, url, bearer string, in, out any) int {
	t.Helper()
	b, _ := json.Marshal(in)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

// A pairing code (by link or by POST /api/pair) is refused once CodeTTL has
// passed, and a code that worked never works again.
func TestPairCodeExpiresAndWorksOnce(t *testing.T) {
	t.Parallel()
	sess, _ := auth.OpenDevices("")
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	sess.SetClock(func() time.Time { return time.Unix(0, now.Load()) })
	srv := httptest.NewServer(New(nil, nil, nil, Options{Token: testToken, Devices: sess, Limits: config.Limits{MaxMessageBytes: 1 << 20}}))
	t.Cleanup(srv.Close)
	mint := func() string {
		var pc struct{ Code string }
		if st := postJSON(t, srv.URL+"/api/pair-codes", testToken, map[string]string{"name": "phone"}, &pc); st != 200 {
			t.Fatalf("pair-codes: %d", st)
		}
		return pc.Code
	}
	late, lateLink := mint(), mint()
	now.Add(int64(auth.CodeTTL + time.Second))
	if st := postJSON(t, srv.URL+"/api/pair", "", map[string]string{"code": late}, nil); st != 401 {
		t.Fatalf("an expired pairing code paired a program: %d", st)
	}
	if st := status(t, srv, LoginPath(lateLink), nil); st != 401 {
		t.Fatalf("an expired pairing link signed a browser in: %d", st)
	}
	code := mint()
	var out struct{ Token string }
	if st := postJSON(t, srv.URL+"/api/pair", "", map[string]string{"code": code, "name": "ci"}, &out); st != 200 || out.Token == "" {
		t.Fatalf("pair: %d", st)
	}
	if st := status(t, srv, LoginPath(code), nil); st != 401 {
		t.Fatalf("a spent pairing code signed a browser in: %d", st)
	}
	if len(sess.List()) != 1 {
		t.Fatalf("devices: %+v", sess.List())
	}
}

// A device's session that ends between the sign-in check and the request's
// registration (a revocation racing the request; here the clock moves past
// its expiry, the same path) is refused: live.end ran before the request was
// there to cancel, so nothing else would stop it.
func TestRequestOfADeviceEndedDuringItsCheckIsRefused(t *testing.T) {
	t.Parallel()
	sess, _ := auth.OpenDevices("")
	secret, _, err := sess.Create("phone", auth.KindProgram)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	var calls atomic.Int64
	sess.SetClock(func() time.Time {
		if calls.Add(1) == 1 { // the lookup
			return t0
		}
		return t0.Add(2 * auth.SessionTTL) // the re-check after registering
	})
	srv := httptest.NewServer(New(nil, nil, nil, Options{Token: testToken, Devices: sess, Limits: config.Limits{MaxMessageBytes: 1 << 20}}))
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest("GET", srv.URL+"/api/version", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("a request of a device that ended during its check: %d, want 401", resp.StatusCode)
	}
}
