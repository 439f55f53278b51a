package uploads

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
)

func TestClean(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"notes.txt":          "notes.txt",
		"../../etc/passwd":   "passwd",
		`..\..\boot.ini`:     "boot.ini",
		"..":                 "file",
		"":                   "file",
		".bashrc":            "bashrc",
		"a\x00b\nc.txt":      "a_b_c.txt",
		"/":                  "_",
		"dir/sub/report.pdf": "report.pdf",
		"  spaced name .md ": "spaced name .md",
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
	long := Clean(strings.Repeat("é", 200) + ".txt")
	if len(long) > maxNameBytes || filepath.Ext(long) != ".txt" {
		t.Errorf("a long name: got %q (%d bytes), want at most %d bytes ending .txt", long, len(long), maxNameBytes)
	}
}

func TestSaveNumbersNamesAndNeverOverwrites(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	files := []File{{Name: "a.txt", Data: []byte("one")}, {Name: "../a.txt", Data: []byte("two")}}
	refs, err := Save(cwd, []string{cwd}, files)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Save(cwd, []string{cwd}, files[:1])
	if err != nil {
		t.Fatal(err)
	}
	refs = append(refs, again...)
	want := []string{Dir + "/a.txt", Dir + "/a (2).txt", Dir + "/a (3).txt"}
	for i, r := range refs {
		if r.Path != want[i] {
			t.Errorf("file %d saved as %q, want %q", i, r.Path, want[i])
		}
	}
	for i, content := range []string{"one", "two", "one"} {
		got, err := os.ReadFile(filepath.Join(cwd, want[i]))
		if err != nil || string(got) != content {
			t.Errorf("%s holds %q (%v), want %q", want[i], got, err, content)
		}
	}
	if ig, _ := os.ReadFile(filepath.Join(cwd, Dir, ".gitignore")); string(ig) != "*\n" {
		t.Errorf("got .gitignore %q, want the uploads kept out of version control", ig)
	}
}

func TestSaveStaysInside(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	cwd := filepath.Join(root, "proj")
	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Save(outside, []string{root}, []File{{Name: "x", Data: []byte("x")}}); !errors.Is(err, chat.ErrOutsideRoot) {
		t.Errorf("a directory outside the roots: got %v, want ErrOutsideRoot", err)
	}
	// The uploads folder is a symlink out of the directory: refused, nothing written outside.
	if err := os.Symlink(outside, filepath.Join(cwd, Dir)); err != nil {
		t.Fatal(err)
	}
	if _, err := Save(cwd, []string{root}, []File{{Name: "x", Data: []byte("x")}}); err == nil {
		t.Error("uploads folder linked outside the directory: got no error, want a refusal")
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("got %d files written outside the working directory, want none", len(ents))
	}
}
