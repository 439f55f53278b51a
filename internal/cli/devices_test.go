package cli_test

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The real binary over its own certificate: `parley pair --json` and `parley
// pair` reach the daemon through the pinned certificate and print the link
// (and a QR code); a program pairs with it; `parley devices` lists the device
// and `parley devices revoke` ends it, whose token then gets 401.
func TestPairAndDevicesCommandsOverTLS(t *testing.T) {
	t.Parallel()
	srv := serveTLS(t)
	bin, data, cert := srv.bin, srv.data, srv.cert
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append(args, "--data", data)...).Output()
		if err != nil {
			t.Fatalf("parley %v: %v %s", args, err, out)
		}
		return string(out)
	}
	var pc struct {
		URL, Code string
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal([]byte(run("pair", "--json", "--name", "ci")), &pc); err != nil || !strings.HasPrefix(pc.URL, "https://127.0.0.1:") || pc.Code == "" {
		t.Fatalf("pair --json: %+v %v", pc, err)
	}
	if out := run("pair"); !tlsLoginLink.MatchString(out) || !strings.Contains(out, "█") {
		t.Fatalf("pair printed no QR code and link:\n%s", out)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cert.Pool()}}, Timeout: 10 * time.Second}
	base := pc.URL[:strings.Index(pc.URL, "/login")]
	resp, err := hc.Post(base+"/api/pair", "application/json", bytes.NewReader([]byte(`{"code":"`+pc.Code+`"}`)))
	if err != nil {
		t.Fatal(err)
	}
	var paired struct {
		DeviceID string `json:"device_id"`
		Token    string `json:"token"`
	}
	json.NewDecoder(resp.Body).Decode(&paired)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("pair: %d", resp.StatusCode)
	}
	if out := run("devices"); !strings.Contains(out, paired.DeviceID) || !strings.Contains(out, `"ci"`) {
		t.Fatalf("devices:\n%s", out)
	}
	run("devices", "revoke", paired.DeviceID)
	req, _ := http.NewRequest("GET", base+"/api/threads", nil)
	req.Header.Set("Authorization", "Bearer "+paired.Token)
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("a revoked device's token: %d", resp.StatusCode)
	}
	if out := run("devices", "--json"); strings.Contains(out, paired.DeviceID) {
		t.Fatalf("revoked device still listed: %s", out)
	}
}
