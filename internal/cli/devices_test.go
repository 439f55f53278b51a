package cli_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/selfsigned"
)

// The real binary over its own certificate: `parley pair --json` and `parley
// pair` reach the daemon through the pinned certificate and print the link
// (and a QR code); a program pairs with it; `parley devices` lists the device
// and `parley devices revoke` ends it, whose token then gets 401.
func TestPairAndDevicesCommandsOverTLS(t *testing.T) {
	bin := testkit.ParleyBinary(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cert := selfsigned.Make(t, dir, "127.0.0.1")
	cmd := exec.Command(bin, "serve", "--data", data, "--addr", "127.0.0.1:0", "--tls-cert", cert.CertFile, "--tls-key", cert.KeyFile)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "PATH=", "XDG_CONFIG_HOME=" + t.TempDir()}
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	link := regexp.MustCompile(`https://127\.0\.0\.1:\d+/login\?code=[0-9a-f]+`)
	printed := ""
	for printed == "" && sc.Scan() {
		printed = link.FindString(sc.Text())
	}
	if printed == "" {
		t.Fatal("no https link printed")
	}
	go io.Copy(io.Discard, stdout)
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
	if out := run("pair"); !link.MatchString(out) || !strings.Contains(out, "█") {
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
