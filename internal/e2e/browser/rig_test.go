//go:build e2e

package browser

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
	"github.com/parleyhq/parley/internal/testkit/pushchild"
)

var updateShots = flag.Bool("screenshots", false, "write the dashboard's screenshots to docs/screenshots")

const chromium = "/usr/bin/chromium"

// wait bounds every step: Claude Code starts in a few seconds; nothing waits longer.
const wait = 60 * time.Second

// rig is one parley serve with its data folder, the scripted model API and a
// working directory inside the configured root.
type rig struct {
	t       testing.TB
	dir     string
	work    string
	api     *claudeapi.Server
	addr    string // host:port, kept across restarts
	Base    string // http://host:port
	Token   string
	Printed string   // the one-time sign-in link parley serve printed
	env     []string // set for parley serve after the test's own environment
	args    []string // more arguments for parley serve
	// pushes, when set, runs parley serve as this test binary (pushchild)
	// with the Web Push stand-in's Net: see newPushRig.
	pushes bool
	outMu  sync.Mutex // guards what out holds (out is written as serve prints)

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	out  *strings.Builder
}

func newRig(t testing.TB) *rig {
	t.Helper()
	return newRigWith(t, nil, "")
}

// newRigWith is newRig with a hook that fills the data folder before parley starts
// and extra lines for the config file.
func newRigWith(t testing.TB, seed func(dataDir, cwd string), extraConfig string) *rig {
	t.Helper()
	return newRigAgents(t, seed, extraConfig)
}

// newRigAgents is newRigWith with more agents beside "claude" (the default): the
// same Claude Code against the same scripted model, under other ids.
func newRigAgents(t testing.TB, seed func(dataDir, cwd string), extraConfig string, moreAgents ...string) *rig {
	t.Helper()
	return newRigPushes(t, false, seed, extraConfig, moreAgents...)
}

// newPushRig is newRig whose parley serve pushes to the Web Push stand-in
// (pushService). parley's push sender refuses a loopback endpoint and a
// certificate of no public CA, and nothing a person can set (flag, config
// key, environment variable) changes that. So this parley serve is this test
// binary run as a child process (testkit/pushchild): the same serve command,
// flags and config file, in a process of its own that a test may kill -9,
// given the stand-in's Net in Go.
func newPushRig(t testing.TB) *rig {
	t.Helper()
	return newRigPushes(t, true, nil, "")
}

func newRigPushes(t testing.TB, pushes bool, seed func(dataDir, cwd string), extraConfig string, moreAgents ...string) *rig {
	t.Helper()
	testkit.NeedsBrowser(t)
	testkit.NeedsRealAgent(t)
	dir, err := os.MkdirTemp("", "parley-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	// Claude Code may still write its HOME while it exits after parley: retry the removal.
	t.Cleanup(func() {
		testkit.Within(15*time.Second, func() bool { return os.RemoveAll(dir) == nil })
	})
	r := &rig{t: t, dir: dir, addr: "127.0.0.1:0", pushes: pushes}
	r.work = filepath.Join(r.dir, "work")
	if err := os.MkdirAll(filepath.Join(r.work, "proj"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.api = claudeapi.Start(t, Scenario(r.work))
	env := claudeapi.Env(t, r.api, filepath.Join(r.dir, "home"), r.work)
	var agentEnv strings.Builder
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&agentEnv, "%s = %q\n", k, v)
	}
	cfg := fmt.Sprintf(`roots = [%q]
default_agent = "claude"

[[agent]]
id = "claude"
name = "Claude Code"
transport = "stream"
command = %q
roots = [%q]

[agent.env]
%s
`, r.work, testkit.ClaudeBin(t), r.work, agentEnv.String())
	for _, id := range moreAgents {
		transport, options := "stream", ""
		if name, ok := strings.CutSuffix(id, ":tmux"); ok {
			// Claude Code's terminal UI, on a tmux server of its own.
			b := make([]byte, 4)
			rand.Read(b)
			socket := "parley-e2e-" + hex.EncodeToString(b)
			t.Cleanup(func() { exec.Command("tmux", "-L", socket, "kill-server").Run() })
			id, transport, options = name, "tmux", fmt.Sprintf("\n[agent.options]\nsocket = %q\n", socket)
		}
		cfg += fmt.Sprintf(`
[[agent]]
id = %q
transport = %q
command = %q
roots = [%q]
%s
[agent.env]
%s
`, id, transport, testkit.ClaudeBin(t), r.work, options, agentEnv.String())
	}
	cfg += extraConfig
	if err := os.WriteFile(filepath.Join(r.dir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if seed != nil {
		seed(filepath.Join(r.dir, "data"), r.work)
	}
	r.start()
	t.Cleanup(r.stop)
	return r
}

var urlRE = regexp.MustCompile(`(https?)://(127\.0\.0\.1:\d+)/login\?code=([0-9a-f]+)`)

// start runs parley serve and waits for the URL it prints.
func (r *rig) start() {
	r.t.Helper()
	args := append([]string{"serve", "--config", filepath.Join(r.dir, "config.toml"),
		"--data", filepath.Join(r.dir, "data"), "--addr", r.addr, "--log-level", "debug"}, r.args...)
	ctx, cancel := context.WithCancel(context.Background())
	var cmd *exec.Cmd
	if r.pushes {
		cmd = pushchild.Command(ctx, args...)
	} else {
		cmd = exec.CommandContext(ctx, testkit.ParleyBinary(r.t), args...)
		cmd.Env = os.Environ()
	}
	cmd.Dir = r.work
	cmd.Env = append(append(cmd.Env, "HOME="+filepath.Join(r.dir, "home")), r.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		cancel()
		r.t.Fatalf("parley serve: %v", err)
	}
	done := make(chan struct{})
	found := make(chan []string, 1)
	out := &strings.Builder{}
	outMu := &r.outMu
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			outMu.Lock()
			out.WriteString(line + "\n")
			outMu.Unlock()
			if m := urlRE.FindStringSubmatch(line); m != nil {
				select {
				case found <- m:
				default:
				}
			}
		}
	}()
	go func() {
		cmd.Wait()
		pw.Close()
		cancel()
		close(done)
	}()
	select {
	case m := <-found:
		tok, err := os.ReadFile(filepath.Join(r.dir, "data", "token"))
		if err != nil {
			r.t.Fatal(err)
		}
		r.addr, r.Base, r.Printed, r.Token = m[2], m[1]+"://"+m[2], m[0], strings.TrimSpace(string(tok))
	case <-done:
		outMu.Lock()
		defer outMu.Unlock()
		r.t.Fatalf("parley serve exited before printing its URL:\n%s", out.String())
	case <-time.After(wait):
		r.t.Fatal("parley serve printed no URL within a minute")
	}
	r.mu.Lock()
	r.cmd, r.done, r.out = cmd, done, out
	r.mu.Unlock()
	r.t.Cleanup(func() {
		if r.t.Failed() {
			outMu.Lock()
			defer outMu.Unlock()
			r.t.Logf("parley serve's log:\n%s", out.String())
		}
	})
}

// output is what parley serve has printed so far.
func (r *rig) output() string {
	r.mu.Lock()
	out := r.out
	r.mu.Unlock()
	r.outMu.Lock()
	defer r.outMu.Unlock()
	return out.String()
}

// stop ends parley serve (SIGTERM to its group) and waits for it.
func (r *rig) stop() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// LoginURL is a fresh one-time sign-in link, as `parley login-link` prints.
func (r *rig) LoginURL() string {
	var out struct {
		Path string `json:"path"`
	}
	r.rest(r.t, http.MethodPost, "/api/login-codes", nil, &out)
	return r.Base + out.Path
}

// browser starts a fresh headless Chromium (its own profile folder) and returns a
// tab's context, closed when the test ends.
func browser(t testing.TB, width, height int) context.Context {
	t.Helper()
	ctx, closeIt := startBrowser(t, width, height)
	t.Cleanup(closeIt)
	return ctx
}

// startBrowser is browser with the closing left to the caller.
func startBrowser(t testing.TB, width, height int) (context.Context, func()) {
	t.Helper()
	profile, err := os.MkdirTemp("", "parley-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, closeIt := startBrowserIn(t, profile, width, height)
	return ctx, func() {
		closeIt()
		os.RemoveAll(profile)
	}
}

// startBrowserWith is startBrowser with more Chromium options.
func startBrowserWith(t testing.TB, width, height int, extra ...chromedp.ExecAllocatorOption) (context.Context, func()) {
	t.Helper()
	profile, err := os.MkdirTemp("", "parley-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, closeIt := startBrowserIn(t, profile, width, height, extra...)
	return ctx, func() {
		closeIt()
		os.RemoveAll(profile)
	}
}

// startBrowserIn starts Chromium on the profile folder given; closing it leaves
// the folder (its History database, cookies…) for the caller to read.
func startBrowserIn(t testing.TB, profile string, width, height int, extra ...chromedp.ExecAllocatorOption) (context.Context, func()) {
	t.Helper()
	testkit.NeedsBrowser(t)
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("chromium is not installed at %s (apt-get install -y chromium): %v", chromium, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(width, height),
	}
	opts = append(opts, extra...)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	closeIt := func() {
		cancelB()
		cancelA() // waits for Chromium to exit
	}
	if err := chromedp.Do(ctx); err != nil {
		closeIt()
		t.Fatalf("start chromium: %v", err)
	}
	return ctx, closeIt
}

// newTab opens another tab in the same browser (same cookies).
func newTab(t testing.TB, ctx context.Context) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(ctx)
	if err := chromedp.Do(tab); err != nil {
		cancel()
		t.Fatalf("new tab: %v", err)
	}
	t.Cleanup(cancel)
	return tab
}

// run runs actions with the step deadline and fails the test with what was being done.
func run(t testing.TB, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := chromedp.Do(c, actions...); err != nil {
		hc, hcancel := context.WithTimeout(ctx, 5*time.Second)
		html, _ := chromedp.Run(hc, chromedp.Evaluate[string](`(document.querySelector("main, .phone")||document.body).outerHTML`))
		hcancel()
		if len(html) > 4000 {
			html = html[len(html)-4000:]
		}
		t.Fatalf("%s: %v\npage (tail):\n%s", what, err, html)
	}
}

// click clicks what sel selects as a person does, pressing and releasing the
// mouse at its centre, and then checks that the click reached it. A control
// that moves (or is drawn anew) under the pointer as the page lays out loses a
// person's click the same way; without the check such a click shows only as
// the next step waiting a minute for an effect that never comes. The page
// notes where the click landed in sessionStorage, which outlives the
// navigation a click may start (a form's POST, a link).
func click[S chromedp.Selectable](sel S) chromedp.Action[chromedp.Void] {
	return chromedp.QueryAfter(sel, func(ctx context.Context, tg *chromedp.Target, nodes []*chromedp.Node) (chromedp.Void, error) {
		var none chromedp.Void
		if len(nodes) == 0 {
			return none, fmt.Errorf("click %v: nothing selected", sel)
		}
		n := nodes[0]
		obj, err := cdp.Call(ctx, tg, dom.ResolveNode, dom.ResolveNodeParams{NodeID: n.NodeID})
		if err != nil {
			return none, fmt.Errorf("click %v: %w", sel, err)
		}
		if _, err := chromedp.CallFunctionOn[chromedp.Void](clickWatchJS, func(p *cdpruntime.CallFunctionOnParams) {
			p.ObjectID = obj.Object.ObjectID
		})(ctx, tg); err != nil {
			return none, fmt.Errorf("click %v: watch it: %w", sel, err)
		}
		if _, err := chromedp.MouseClickNode(n)(ctx, tg); err != nil {
			return none, fmt.Errorf("click %v: %w", sel, err)
		}
		// The renderer has handled the click once dispatchMouseEvent answers;
		// reading the note fails only while a navigation swaps the document.
		deadline := time.Now().Add(10 * time.Second)
		for {
			note, err := chromedp.Evaluate[string](`sessionStorage.getItem("parley-e2e-click") ?? "no click event reached the page"`)(ctx, tg)
			if err == nil {
				if note != "ok" {
					return none, fmt.Errorf("click %v did not reach it: %s", sel, note)
				}
				return none, nil
			}
			if time.Now().After(deadline) {
				return none, fmt.Errorf("click %v: read where it landed: %w", sel, err)
			}
			if _, err := chromedp.Sleep(50*time.Millisecond)(ctx, tg); err != nil { // pacing the read, not a synchronisation
				return none, err
			}
		}
	}, chromedp.NodeVisible)
}

// clickWatchJS runs with the element to click as this: the next click event
// anywhere in the page notes whether it reached the element, or where it went.
const clickWatchJS = `function () {
  const want = this;
  sessionStorage.removeItem("parley-e2e-click");
  const name = (el) => el instanceof Element
    ? "<" + el.tagName.toLowerCase() + (el.className ? " class=\"" + el.className + "\"" : "") + ">" + (el.textContent || "").trim().slice(0, 40)
    : String(el);
  window.addEventListener("click", (e) => {
    sessionStorage.setItem("parley-e2e-click",
      want.contains(e.target) ? "ok"
      : !want.isConnected ? "the element was drawn anew before the click (it went to " + name(e.target) + ")"
      : "the click at " + e.clientX + "," + e.clientY + " landed on " + name(e.target) + "; the element is now at " + JSON.stringify(want.getBoundingClientRect()));
  }, { capture: true, once: true });
}`

// holdRequests holds back the tab's requests whose URLs match the patterns
// (wildcards as Fetch.enable takes them) until the returned release is called
// (at the latest when the test ends), so a test sees the page as it is before
// their answers come. After release, requests go as usual.
func holdRequests(t testing.TB, ctx context.Context, patterns ...string) (release func()) {
	t.Helper()
	var ps []*fetch.RequestPattern
	for _, p := range patterns {
		ps = append(ps, &fetch.RequestPattern{URLPattern: p, RequestStage: fetch.RequestStageRequest})
	}
	lctx, stop := context.WithCancel(ctx)
	paused := chromedp.Events(lctx, fetch.RequestPaused)
	var (
		mu       sync.Mutex
		released bool
		ids      []fetch.RequestID
	)
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			mu.Lock()
			if !released {
				ids = append(ids, ev.RequestID)
				ev.RequestID = ""
			}
			mu.Unlock()
			if ev.RequestID != "" {
				chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
			}
		}
	}()
	var once sync.Once
	release = func() {
		once.Do(func() {
			mu.Lock()
			released = true
			held := ids
			mu.Unlock()
			for _, id := range held {
				chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id})
			}
			chromedp.Call(ctx, fetch.Disable, cdp.Empty{})
		})
	}
	t.Cleanup(func() { release(); stop() })
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: ps}); err != nil {
		t.Fatalf("hold requests: %v", err)
	}
	return release
}

// until polls a JavaScript condition in the page until it is true.
func until(t testing.TB, ctx context.Context, what, js string) {
	t.Helper()
	untilWithin(t, ctx, wait, what, js)
}

// untilWithin is until with its own bound, for a condition that must come
// sooner than something else would make it true (a fallback poll).
func untilWithin(t testing.TB, ctx context.Context, within time.Duration, what, js string) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := chromedp.Run(c, chromedp.Evaluate[bool](js))
		cancel()
		if err == nil && ok {
			return
		}
		if err != nil {
			last = err.Error()
		}
		c, cancel = context.WithTimeout(ctx, time.Second)
		_ = chromedp.Do(c, chromedp.Sleep(100*time.Millisecond)) // the poll's pace, not a synchronisation
		cancel()
	}
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	body, _ := chromedp.Run(c, chromedp.Evaluate[string](`(document.querySelector("main, .phone")||document.body).innerText`))
	cancel()
	t.Fatalf("%s: still false after %v: %s (%s)\npage text:\n%s", what, within, js, last, body)
}

func eval[T any](t testing.TB, ctx context.Context, js string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// shot saves a screenshot to docs/screenshots when -screenshots is given.
func shot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	if !*updateShots {
		return
	}
	c, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	png, err := chromedp.Run(c, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := filepath.Join(testkit.RepoRoot(t), "docs", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func phoneViewport() chromedp.Action[chromedp.Void] {
	return chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulateScale(2))
}

func theme(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: name}}})
		return err
	})
}

// rest calls the REST API with the token (another device, as it were) and decodes
// the JSON answer into out when out is not nil.
func (r *rig) rest(t testing.TB, method, path string, body, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.Base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+r.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: wait}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: got %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// get does a plain HTTP GET (no browser, no cookie unless given).
func get(t testing.TB, url string, cookie *http.Cookie) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// The real parley binary is built once for the package and removed after.
func TestMain(m *testing.M) {
	pushchild.Main() // newPushRig's parley serve: this binary
	testkit.RunAndRemoveBinary(m)
}
