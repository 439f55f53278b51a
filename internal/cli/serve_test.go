package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/cli"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/ui"
)

func TestServePrintsTheLinkAnswersAndShutsDownOnSIGTERM(t *testing.T) {
	t.Parallel()
	bin := testkit.ParleyBinary(t)
	data := filepath.Join(t.TempDir(), "data")
	work := t.TempDir()
	cmd := exec.Command(bin, "serve", "--data", data)
	cmd.Dir = work
	// An empty PATH: no agents are detected, and parley still runs.
	cmd.Env = []string{"PARLEY_ADDR=127.0.0.1:0", "HOME=" + t.TempDir(), "PATH="}
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stdout)
	var m []string
	for m == nil && sc.Scan() {
		m = loginLink.FindStringSubmatch(sc.Text())
	}
	if m == nil {
		t.Fatalf("no dashboard link printed; stderr:\n%s", stderr.String())
	}
	addr := m[1]

	st, err := os.Stat(filepath.Join(data, "token"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v; want 0600", err, st.Mode().Perm())
	}
	out, err := exec.Command(bin, "token", "--data", data).Output()
	token := strings.TrimSpace(string(out))
	if err != nil || len(token) != 64 {
		t.Fatalf("parley token: %q %v, want the 64-hex token", out, err)
	}
	if strings.Contains(m[0], token) {
		t.Fatalf("the printed link %q carries the token", m[0])
	}
	// The printed link signs in once; `parley login-link` prints another.
	if c := signIn(t, m[0]); c == nil {
		t.Fatal("the printed link did not sign in")
	}
	if c := signIn(t, m[0]); c != nil {
		t.Fatal("the printed link signed in a second time")
	}
	out, err = exec.Command(bin, "login-link", "--data", data).Output()
	if err != nil {
		t.Fatalf("parley login-link: %v", err)
	}
	fresh := loginLink.FindStringSubmatch(string(out))
	if fresh == nil || fresh[1] != addr {
		t.Fatalf("parley login-link printed %q, want a link to %s", out, addr)
	}
	if c := signIn(t, fresh[0]); c == nil {
		t.Fatal("the link parley login-link printed did not sign in")
	}

	req, _ := http.NewRequest("GET", "http://"+addr+"/api/version", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		PID     int       `json:"pid"`
		Started time.Time `json:"started"`
		Version string    `json:"version"`
		UIHash  string    `json:"ui_hash"`
	}
	json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if v.PID != cmd.Process.Pid || v.Started.IsZero() || v.Version == "" {
		t.Fatalf("/api/version %+v: want pid %d, a start time and a version", v, cmd.Process.Pid)
	}
	// The binary embeds the same ui/dist this test process does.
	if want := ui.Hash(); v.UIHash != want {
		t.Fatalf("/api/version ui_hash %q, want the embedded bundle's hash %q", v.UIHash, want)
	}
	resp, err = http.Get("http://" + addr + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, _ = http.Get("http://" + addr + "/metrics")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/metrics without token: %d, want 401", resp.StatusCode)
	}
	resp.Body.Close()
	req, _ = http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, _ = http.DefaultClient.Do(req)
	var body strings.Builder
	bufio.NewReader(resp.Body).WriteTo(&body)
	resp.Body.Close()
	for _, name := range []string{"parley_connections", "parley_queued_inputs", "parley_receipts_total", "parley_events_total"} {
		if !strings.Contains(body.String(), name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "addr")); err != nil {
		t.Errorf("no address file for local clients: %v", err)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("still running 20 s after SIGTERM")
	}
	if _, err := os.Stat(filepath.Join(data, "addr")); !os.IsNotExist(err) {
		t.Errorf("address file left behind: %v", err)
	}
	if strings.Contains(stderr.String(), token) {
		t.Error("the token appears in the log")
	}
}

// loginLink is the one-time sign-in link parley prints.
var loginLink = regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/login\?code=[0-9a-f]{32}`)

// signIn opens a sign-in link as a browser would and returns the session
// cookie it got, or nil when it was refused.
func signIn(t *testing.T, link string) *http.Cookie {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, k := range resp.Cookies() {
		if strings.HasPrefix(k.Name, "parley_session_") && k.MaxAge > 0 && resp.StatusCode == http.StatusSeeOther {
			return k
		}
	}
	return nil
}

func TestServeRefusesABadConfig(t *testing.T) {
	t.Parallel()
	bin := testkit.ParleyBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "config.toml")
	os.WriteFile(file, []byte("[[agent]]\nid = \"x\"\ntransport = \"scripted\"\ncommand = \"x\"\n"), 0o600)
	cmd := exec.Command(bin, "serve", "--data", filepath.Join(dir, "data"), "--config", file, "--addr", "127.0.0.1:0")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("serve started with a config naming an unknown transport")
	}
	if !strings.Contains(string(out), `transport "scripted"`) {
		t.Fatalf("error does not name the problem:\n%s", out)
	}
}

// Risky settings are warned about at start, in the log and under the link, and
// the link names an address a browser can open, never 0.0.0.0 or [::].
func TestServeWarnsAboutRiskySettings(t *testing.T) {
	t.Parallel()
	bin := testkit.ParleyBinary(t)
	dir := t.TempDir()
	slash := filepath.Join(dir, "slash")
	if err := os.Symlink("/", slash); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "config.toml")
	os.WriteFile(file, []byte(`roots = [`+strconvQuote(slash)+`]
allowed_origins = ["*", "null"]
`), 0o600)
	for _, tc := range []struct{ addr, host string }{{"0.0.0.0:0", "127.0.0.1"}, {"[::]:0", "127.0.0.1"}} {
		cmd := exec.Command(bin, "serve", "--data", filepath.Join(dir, "data"), "--config", file, "--addr", tc.addr, "--insecure-http")
		cmd.Env = []string{"HOME=" + t.TempDir(), "PATH="}
		stdout, _ := cmd.StdoutPipe()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		var printed []string
		for sc.Scan() {
			printed = append(printed, sc.Text())
			if len(printed) == 6 { // the line, the link, four warnings
				break
			}
		}
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		text := strings.Join(printed, "\n")
		link := regexp.MustCompile(`http://(\S+?)/login\?code=`).FindStringSubmatch(text)
		if link == nil || !strings.HasPrefix(link[1], tc.host+":") {
			t.Errorf("--addr %s: printed link %v, want one on %s:\n%s", tc.addr, link, tc.host, text)
		}
		for _, want := range []string{"without TLS", "whole file system", `allowed_origins holds "*"`, `allowed_origins holds "null"`} {
			if !strings.Contains(text, "warning: ") || !strings.Contains(text, want) {
				t.Errorf("--addr %s: no printed warning %q:\n%s", tc.addr, want, text)
			}
			if !strings.Contains(stderr.String(), "level=WARN") || !strings.Contains(stderr.String(), strings.ReplaceAll(want, `"`, `\"`)) {
				t.Errorf("--addr %s: no logged warning %q:\n%s", tc.addr, want, stderr.String())
			}
		}
	}
	// A loopback daemon with ordinary settings (and an agent) warns about nothing.
	os.MkdirAll(filepath.Join(dir, "parley"), 0o700)
	os.WriteFile(filepath.Join(dir, "parley", "config.toml"), []byte("[[agent]]\nid = \"a\"\ntransport = \"acp\"\ncommand = \"/bin/true\"\n"), 0o600)
	cmd := exec.Command(bin, "serve", "--data", filepath.Join(dir, "data2"), "--addr", "127.0.0.1:0")
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=", "XDG_CONFIG_HOME=" + dir}
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Scan()
	sc.Scan()
	cmd.Process.Signal(syscall.SIGTERM)
	rest, _ := io.ReadAll(stdout)
	cmd.Wait()
	if strings.Contains(string(rest), "warning") || strings.Contains(stderr.String(), "level=WARN") {
		t.Errorf("warnings for a loopback daemon with ordinary settings:\n%s\n%s", rest, stderr.String())
	}
}

func strconvQuote(s string) string { return strconv.Quote(s) }

// startServeIn runs the real binary with args in dir, its HOME home and an
// empty PATH, and returns its address and token once it printed its link.
func startServeIn(t *testing.T, dir, home string, args ...string) (addr, token string) {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	m := serveProc(t, testkit.ParleyBinary(t), dir, home, data, loginLink, args...)
	tok, err := os.ReadFile(filepath.Join(data, "token"))
	if err != nil {
		t.Fatal(err)
	}
	return m[1], strings.TrimSpace(string(tok))
}

// serveProc runs `bin serve --data data --addr 127.0.0.1:0 args…` in dir, its
// HOME home and an empty PATH, stopped at the test's end, and returns the
// first match of link in what it prints.
func serveProc(t *testing.T, bin, dir, home, data string, link *regexp.Regexp, args ...string) []string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--data", data, "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + home, "PATH=", "XDG_CONFIG_HOME=" + t.TempDir()}
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	var m []string
	for m == nil && sc.Scan() {
		m = link.FindStringSubmatch(sc.Text())
	}
	if m == nil {
		t.Fatalf("no link like %s printed", link)
	}
	go io.Copy(io.Discard, stdout)
	return m
}

// TestServeRootsAreHomeOrGiven: run from a source checkout (as the README's
// `go run ./cmd/parley serve` is), parley lets threads work in the person's
// home, not in the checkout; --root DIR (repeatable) says where instead; a
// refused directory says how to allow it, once.
func TestServeRootsAreHomeOrGiven(t *testing.T) {
	t.Parallel()
	base, _ := filepath.EvalSymlinks(t.TempDir())
	home, checkout, other := filepath.Join(base, "home"), filepath.Join(base, "parley-checkout"), filepath.Join(base, "other")
	for _, d := range []string{filepath.Join(home, "proj"), checkout, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(base, "config.toml")
	// An agent that starts nothing useful: only where its thread may work matters here.
	os.WriteFile(cfg, []byte("[[agent]]\nid = \"a\"\ntransport = \"acp\"\ncommand = \"/bin/true\"\n"), 0o600)
	roots := func(addr, token string) []string {
		req, _ := http.NewRequest("GET", "http://"+addr+"/api/fs/complete", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Dirs []string `json:"dirs"`
		}
		json.NewDecoder(resp.Body).Decode(&body)
		return body.Dirs
	}

	addr, token := startServeIn(t, checkout, home, "--config", cfg)
	if got := roots(addr, token); len(got) != 1 || got[0] != home {
		t.Errorf("roots when serve starts in a checkout: %q, want only the home directory %s", got, home)
	}
	remote := []string{"--server", "http://" + addr, "--token", token, "--chat", "roots"}
	code, _, errs := parley(append(append([]string{"send"}, remote...), "--new", "--cwd", checkout, "hello")...)
	if code != cli.ExitNotDelivered || strings.Count(errs, "outside the allowed roots") != 1 ||
		!strings.Contains(errs, "--root "+checkout) || !strings.Contains(errs, "roots in the config file") {
		t.Errorf("a thread in the checkout: status %d, stderr %q; want %d, saying once that it is outside the roots and how to allow it (--root, the config's roots)",
			code, errs, cli.ExitNotDelivered)
	}
	parley(append(append([]string{"send"}, remote...), "--new", "--cwd", filepath.Join(home, "proj"), "hello")...)
	ths, err := (client.API{Server: "http://" + addr, Token: token}).Threads(context.Background())
	if err != nil || len(ths) != 1 || ths[0].Cwd != filepath.Join(home, "proj") {
		t.Errorf("threads after a send in the home's project: %+v (%v), want one there", ths, err)
	}

	addr, token = startServeIn(t, checkout, home, "--config", cfg, "--root", checkout, "--root", other)
	if got := roots(addr, token); strings.Join(got, " ") != checkout+" "+other {
		t.Errorf("roots with --root twice: %q, want %s and %s", got, checkout, other)
	}
}

// The real parley binary is built once for the package and removed after.
func TestMain(m *testing.M) { testkit.RunAndRemoveBinary(m) }

// Plain HTTP on an address other machines reach is refused unless the person
// says --insecure-http (or insecure_http in the config): the start fails with
// words naming the ways out, and nothing listens.
func TestServeRefusesClearTextBeyondLoopback(t *testing.T) {
	t.Parallel()
	bin := testkit.ParleyBinary(t)
	dir := t.TempDir()
	for _, addr := range []string{"0.0.0.0:0", "[::]:0"} {
		cmd := exec.Command(bin, "serve", "--data", filepath.Join(dir, "data"), "--addr", addr)
		cmd.Env = []string{"HOME=" + t.TempDir(), "PATH="}
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("--addr %s without TLS started:\n%s", addr, out)
		}
		for _, want := range []string{"without TLS", "--tls-cert", "--insecure-http"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("--addr %s: the refusal does not say %q:\n%s", addr, want, out)
			}
		}
	}
	// The same in the config file.
	file := filepath.Join(dir, "config.toml")
	os.WriteFile(file, []byte("addr = \"0.0.0.0:0\"\n"), 0o600)
	cmd := exec.Command(bin, "serve", "--data", filepath.Join(dir, "data2"), "--config", file)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH="}
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "--insecure-http") {
		t.Fatalf("addr 0.0.0.0 in the config without TLS: %v\n%s", err, out)
	}
}

// A config file is read up to a bound: --config /dev/zero (or a runaway file)
// is refused with words, not read until memory runs out.
func TestServeBoundsTheConfigFile(t *testing.T) {
	t.Parallel()
	bin := testkit.ParleyBinary(t)
	cmd := exec.Command(bin, "serve", "--data", filepath.Join(t.TempDir(), "data"), "--config", "/dev/zero")
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH="}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "larger than") {
		t.Fatalf("--config /dev/zero: %v\n%s", err, out)
	}
}
