package web

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/filetree"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

// filesRig is a server whose root holds a git repository, the thread "t_repo"
// working in it, and a folder beside the repository with a secret.
type filesRig struct {
	srv    *httptest.Server
	repo   string
	secret string // the outside file's content
	pic    []byte
}

func newFilesRig(t *testing.T) *filesRig {
	t.Helper()
	ctx := context.Background()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo, outside := filepath.Join(root, "repo"), filepath.Join(root, "outside")
	fr := &filesRig{repo: repo, secret: "the outside secret"}
	var pic bytes.Buffer
	if err := png.Encode(&pic, image.NewGray(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	fr.pic = pic.Bytes()
	files := map[string]string{
		"repo/main.go":         "package main\n\nfunc main() {}\n",
		"repo/.gitignore":      "secret.env\nbuild/\n",
		"repo/secret.env":      "TOKEN=ignored\n",
		"repo/build/out.txt":   "built\n",
		"repo/sub/inner.txt":   "inner\n",
		"repo/pic.png":         pic.String(),
		"repo/big.txt":         strings.Repeat("x", maxFileText+1),
		"repo/bin.dat":         "a\x00b",
		"outside/secret.txt":   fr.secret,
		"outside/deeper/a.txt": fr.secret,
	}
	for p, body := range files {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"link-out":     filepath.Join(outside, "secret.txt"),
		"link-dir-out": filepath.Join(outside, "deeper"),
		"link-in":      "main.go",
	} {
		if err := os.Symlink(target, filepath.Join(repo, link)); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "-C", repo, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Now()
	for id, cwd := range map[string]string{"t_repo": repo, "t_out": outside, "t_there@b": repo} {
		th := &chat.Thread{ID: chat.ThreadID(id), Agent: "claude", Cwd: cwd, State: chat.ThreadIdle, CreatedAt: now, UpdatedAt: now}
		if err := st.Commit(ctx, store.Batch{Thread: th}); err != nil {
			t.Fatal(err)
		}
	}
	// Only the repository is a root: the folder beside it is not.
	fr.srv = httptest.NewServer(New(nil, st, nil, Options{Token: testToken, Roots: []string{repo}}))
	t.Cleanup(fr.srv.Close)
	return fr
}

// get asks for thread's path (query already escaped by the caller's values).
func (fr *filesRig) get(t *testing.T, thread string, q url.Values, signedIn bool) (int, http.Header, []byte) {
	t.Helper()
	r, _ := http.NewRequest(http.MethodGet, fr.srv.URL+"/api/threads/"+thread+"/files?"+q.Encode(), nil)
	if signedIn {
		r.Header.Set("Authorization", "Bearer "+testToken)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body
}

func (fr *filesRig) view(t *testing.T, q url.Values) filetree.View {
	t.Helper()
	code, _, body := fr.get(t, "t_repo", q, true)
	if code != http.StatusOK {
		t.Fatalf("files %v: %d %s", q, code, body)
	}
	var v filetree.View
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func names(v filetree.View) []string {
	var out []string
	for _, e := range v.Entries {
		out = append(out, e.Name+":"+e.Kind)
	}
	return out
}

// The thread's directory lists what git tracks or could: what .gitignore
// names and .git itself are hidden unless all=1; directories come first.
func TestFilesListTheThreadsDirectoryWithoutWhatGitIgnores(t *testing.T) {
	t.Parallel()
	fr := newFilesRig(t)
	got := names(fr.view(t, url.Values{}))
	want := []string{"sub:dir", ".gitignore:file", "big.txt:file", "bin.dat:file", "link-dir-out:link", "link-in:link", "link-out:link", "main.go:file", "pic.png:file"}
	if !slices.Equal(got, want) {
		t.Errorf("listing:\n got %v\nwant %v", got, want)
	}
	all := names(fr.view(t, url.Values{"all": {"1"}}))
	for _, n := range []string{".git:dir", "build:dir", "secret.env:file"} {
		if !slices.Contains(all, n) {
			t.Errorf("all=1 listing lacks %s: %v", n, all)
		}
	}
	if code, _, body := fr.get(t, "t_repo", url.Values{"path": {"secret.env"}}, true); code != http.StatusNotFound || bytes.Contains(body, []byte("TOKEN")) {
		t.Errorf("an ignored file asked for by name: %d %s, want 404 without its content", code, body)
	}
	if code, _, body := fr.get(t, "t_repo", url.Values{"path": {"build/out.txt"}}, true); code != http.StatusNotFound {
		t.Errorf("a file in an ignored folder: %d %s, want 404", code, body)
	}
	if code, _, body := fr.get(t, "t_repo", url.Values{"path": {".git/config"}}, true); code != http.StatusNotFound {
		t.Errorf(".git/config: %d %s, want 404", code, body)
	}
	if v := fr.view(t, url.Values{"path": {"secret.env"}, "all": {"1"}}); v.Text == nil || *v.Text != "TOKEN=ignored\n" {
		t.Errorf("secret.env with all=1: %+v", v)
	}
	if got := names(fr.view(t, url.Values{"path": {"sub"}})); !slices.Equal(got, []string{"inner.txt:file"}) {
		t.Errorf("sub: %v", got)
	}
}

// A text file comes whole; a link that stays inside is followed; a file too
// large, a binary one and an image say what they are instead; ?raw=1 serves
// an image with its content type and nothing else.
func TestFilesShowTextAndSummariseTheRest(t *testing.T) {
	t.Parallel()
	fr := newFilesRig(t)
	for _, p := range []string{"main.go", "link-in", "./sub/../main.go"} {
		if v := fr.view(t, url.Values{"path": {p}}); v.Kind != "file" || v.Text == nil || *v.Text != "package main\n\nfunc main() {}\n" {
			t.Errorf("%s: %+v", p, v)
		}
	}
	if v := fr.view(t, url.Values{"path": {"big.txt"}}); !v.TooBig || v.Text != nil || v.Size != maxFileText+1 || v.Limit != maxFileText {
		t.Errorf("big.txt: too_large=%v size=%d limit=%d text shown=%v", v.TooBig, v.Size, v.Limit, v.Text != nil)
	}
	if v := fr.view(t, url.Values{"path": {"bin.dat"}}); !v.Binary || v.Text != nil {
		t.Errorf("bin.dat: %+v", v)
	}
	if v := fr.view(t, url.Values{"path": {"pic.png"}}); v.Image != "image/png" || v.Text != nil {
		t.Errorf("pic.png: %+v", v)
	}
	code, h, body := fr.get(t, "t_repo", url.Values{"path": {"pic.png"}, "raw": {"1"}}, true)
	if code != http.StatusOK || h.Get("Content-Type") != "image/png" || !bytes.Equal(body, fr.pic) {
		t.Errorf("pic.png raw: %d %q %d bytes", code, h.Get("Content-Type"), len(body))
	}
	if code, _, _ := fr.get(t, "t_repo", url.Values{"path": {"main.go"}, "raw": {"1"}}, true); code != http.StatusUnsupportedMediaType {
		t.Errorf("main.go raw: %d, want 415 (images only)", code)
	}
	if code, _, _ := fr.get(t, "t_repo", url.Values{"path": {"nothing.txt"}}, true); code != http.StatusNotFound {
		t.Errorf("a missing file: %d, want 404", code)
	}
}

// Nothing outside the thread's directory is read, however it is named: "..",
// an absolute path, a symbolic link (to a file or a folder) leading out; a
// thread whose directory is outside the roots reads nothing; a thread of
// another machine reads nothing here; and every answer needs a sign-in.
func TestFilesRefuseEveryWayOut(t *testing.T) {
	t.Parallel()
	fr := newFilesRig(t)
	for _, p := range []string{
		"..", "../outside/secret.txt", "sub/../../outside/secret.txt",
		filepath.Join(filepath.Dir(fr.repo), "outside", "secret.txt"), "/etc/passwd", fr.repo + "/main.go",
		"link-out", "link-dir-out", "link-dir-out/a.txt",
	} {
		for _, q := range []url.Values{{"path": {p}}, {"path": {p}, "all": {"1"}}, {"path": {p}, "raw": {"1"}}} {
			code, _, body := fr.get(t, "t_repo", q, true)
			if code != http.StatusForbidden || bytes.Contains(body, []byte(fr.secret)) {
				t.Errorf("%v: %d %s, want 403 and nothing of the file", q, code, body)
			}
		}
	}
	if code, _, body := fr.get(t, "t_out", url.Values{"path": {"secret.txt"}}, true); code != http.StatusForbidden || bytes.Contains(body, []byte(fr.secret)) {
		t.Errorf("a thread outside the roots: %d %s, want 403", code, body)
	}
	if code, _, body := fr.get(t, "t_there@b", url.Values{"path": {"main.go"}}, true); code != http.StatusBadRequest || bytes.Contains(body, []byte("package main")) {
		t.Errorf("another machine's thread where no hub can ask: %d %s, want 400 and nothing read here", code, body)
	}
	if code, _, body := fr.get(t, "t_repo", url.Values{"path": {"main.go"}}, false); code != http.StatusUnauthorized || bytes.Contains(body, []byte("package main")) {
		t.Errorf("without signing in: %d %s, want 401", code, body)
	}
}
