package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/channel/web"
	"github.com/parleyhq/parley/internal/client"
)

// call makes a REST call with bearer (none when ""), returning the status.
func (e *testEnv) call(method, path, bearer string, in, out any) int {
	e.t.Helper()
	var body *bytes.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	} else {
		body = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, e.url()+path, body)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

type pairCode struct {
	Code, URL, Path string
	ExpiresAt       time.Time `json:"expires_at"`
	QR              string    `json:"qr_png"`
}

// A pairing code pairs one device, once: the program gets a token of its own
// that reaches the API and the socket, and the device is listed. Revoking it
// ends it at once: its open socket closes with the reason, its token gets
// 401, and the shared token and other devices go on working.
func TestPairDeviceThenRevokeClosesItsSocket(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	tok := e.d.Token()
	var pc pairCode
	if st := e.call("POST", "/api/pair-codes", tok, map[string]string{"name": "Ann's phone"}, &pc); st != 200 ||
		pc.Code == "" || pc.URL != e.url()+"/login?code="+pc.Code || !strings.HasPrefix(pc.QR, "data:image/png;base64,") ||
		time.Until(pc.ExpiresAt) > 6*time.Minute {
		t.Fatalf("pair code: %d %+v", st, pc)
	}
	var paired struct {
		DeviceID string `json:"device_id"`
		Token    string `json:"token"`
	}
	if st := e.call("POST", "/api/pair", "", map[string]string{"code": pc.Code}, &paired); st != 200 || paired.DeviceID == "" || paired.Token == "" || paired.Token == tok {
		t.Fatalf("pair: %d %+v", st, paired)
	}
	if st := e.call("POST", "/api/pair", "", map[string]string{"code": pc.Code, "name": "again"}, nil); st != 401 {
		t.Fatalf("a pairing code worked twice: %d", st)
	}
	// A second device, signed in by opening a link as a browser does.
	var pc2 pairCode
	e.call("POST", "/api/pair-codes", tok, map[string]string{"name": "tablet"}, &pc2)
	nr := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := nr.Get(e.url() + pc2.Path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if strings.HasPrefix(c.Name, web.CookieName+"_") && c.MaxAge > 0 {
			cookie = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || cookie == nil {
		t.Fatalf("opening the pairing link: %d, cookie %v", resp.StatusCode, cookie)
	}

	var list struct {
		Devices []struct{ ID, Name, Kind string } `json:"devices"`
	}
	if st := e.call("GET", "/api/devices", paired.Token, nil, &list); st != 200 || len(list.Devices) != 2 ||
		list.Devices[0].Name != "Ann's phone" || list.Devices[0].Kind != "program" || list.Devices[1].Name != "tablet" || list.Devices[1].Kind != "browser" {
		t.Fatalf("devices: %d %+v", st, list)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := client.Dial(ctx, e.url(), paired.Token, client.Options{Chat: "phone", Since: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if _, err := c.Next(ctx); err != nil { // the socket is live: its first frame came
		t.Fatal(err)
	}
	if st := e.call("DELETE", "/api/devices/"+paired.DeviceID, tok, nil, nil); st != 200 {
		t.Fatalf("revoke: %d", st)
	}
	for {
		if _, err = c.Next(ctx); err != nil {
			break
		}
	}
	if code, reason := client.CloseStatus(err); code != int(web.CloseRevoked) || reason != web.ReasonRevoked {
		t.Fatalf("the revoked device's socket ended with %d %q (%v), want %d %q", code, reason, err, web.CloseRevoked, web.ReasonRevoked)
	}
	if st := e.call("GET", "/api/threads", paired.Token, nil, nil); st != 401 {
		t.Fatalf("a revoked device's token got %d", st)
	}
	if _, _, err := client.Dial(ctx, e.url(), paired.Token, client.Options{Chat: "phone2", Since: -1}); err == nil {
		t.Fatal("a revoked device's token opened a socket")
	}
	if st := e.call("DELETE", "/api/devices/"+paired.DeviceID, tok, nil, nil); st != 404 {
		t.Fatalf("revoking twice: %d", st)
	}
	req, _ := http.NewRequest("GET", e.url()+"/api/threads", nil)
	req.AddCookie(cookie)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the other device stopped working: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if st := e.call("GET", "/api/threads", tok, nil, nil); st != 200 {
		t.Fatalf("the shared token stopped working: %d", st)
	}
}

// A device's codes die with it: a stolen device token that stocked pairing
// codes signs nobody in once the device is revoked, and it can hold at most
// auth.MaxCodesPerDevice unused codes at a time.
func TestARevokedDevicesCodesSignNobodyIn(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	id, tok := e.pair("stolen laptop")
	var codes []string
	for i := range auth.MaxCodesPerDevice {
		var pc pairCode
		path := "/api/pair-codes"
		if i%2 == 1 {
			path = "/api/login-codes"
		}
		if st := e.call("POST", path, tok, map[string]string{"name": "spare"}, &pc); st != 200 {
			t.Fatalf("code %d: %d", i, st)
		}
		codes = append(codes, pc.Code)
	}
	if st := e.call("POST", "/api/pair-codes", tok, nil, nil); st != http.StatusTooManyRequests {
		t.Fatalf("code %d: %d, want 429", auth.MaxCodesPerDevice+1, st)
	}
	if st := e.call("DELETE", "/api/devices/"+id, e.d.Token(), nil, nil); st != 200 {
		t.Fatalf("revoke: %d", st)
	}
	for i, c := range codes {
		if st := e.call("POST", "/api/pair", "", map[string]string{"code": c}, nil); st == 200 {
			t.Fatalf("code %d of the revoked device paired a new device", i)
		}
	}
	if _, tok := e.pair("new phone"); tok == "" { // the shared token's codes still pair
		t.Fatal("no token")
	}
}

// A revocation that could not be saved says so (500): the device is cut off
// now, but would be signed in again after a restart.
func TestRevokeThatCannotBeSavedAnswers500(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	id, tok := e.pair("phone")
	f := filepath.Join(e.cfg.DataDir, auth.SessionsFile)
	if err := os.Remove(f); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(f, 0o700); err != nil { // the rename over it fails, even as root
		t.Fatal(err)
	}
	var out struct {
		Error struct{ Message string }
	}
	if st := e.call("DELETE", "/api/devices/"+id, e.d.Token(), nil, &out); st != 500 || !strings.Contains(out.Error.Message, "could not be saved") {
		t.Fatalf("revoke with an unwritable sessions file: %d %q", st, out.Error.Message)
	}
	if st := e.call("GET", "/api/devices", tok, nil, nil); st != 401 {
		t.Fatalf("the device still reaches the API: %d", st)
	}
}
