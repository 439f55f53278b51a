package acp

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// jailRig is a working directory with a neighbour outside it.
func jailRig(t *testing.T) (j jail, root, outside string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "work")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "a.txt"), "one\ntwo\nthree\nfour\n")
	write(filepath.Join(outside, "secret.txt"), "secret\n")
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	link(filepath.Join(outside, "secret.txt"), "escape.txt")
	link(outside, "escape-dir")
	link(filepath.Join(root, "a.txt"), "alias.txt")
	link(filepath.Join(outside, "nothing-yet.txt"), "dangling.txt")
	j, err := newJail(root)
	if err != nil {
		t.Fatal(err)
	}
	return j, root, outside
}

func TestJailRead(t *testing.T) {
	t.Parallel()
	j, root, outside := jailRig(t)
	tests := []struct {
		name        string
		path        string
		line, limit int
		want        string
		wantOutside bool
		wantErr     bool
	}{
		{name: "file inside", path: filepath.Join(root, "a.txt"), want: "one\ntwo\nthree\nfour\n"},
		{name: "lines 2-3", path: filepath.Join(root, "a.txt"), line: 2, limit: 2, want: "two\nthree\n"},
		{name: "from line 3", path: filepath.Join(root, "a.txt"), line: 3, want: "three\nfour\n"},
		{name: "first line", path: filepath.Join(root, "a.txt"), limit: 1, want: "one\n"},
		{name: "symlink to inside", path: filepath.Join(root, "alias.txt"), want: "one\ntwo\nthree\nfour\n"},
		{name: "absolute outside", path: filepath.Join(outside, "secret.txt"), wantOutside: true},
		{name: "dot-dot escape", path: filepath.Join(root, "sub", "..", "..", "outside", "secret.txt"), wantOutside: true},
		{name: "symlinked file escape", path: filepath.Join(root, "escape.txt"), wantOutside: true},
		{name: "symlinked dir escape", path: filepath.Join(root, "escape-dir", "secret.txt"), wantOutside: true},
		{name: "relative path", path: "a.txt", wantOutside: true},
		{name: "missing inside", path: filepath.Join(root, "nope.txt"), wantErr: true},
		{name: "directory", path: filepath.Join(root, "sub"), wantErr: true},
		{name: "root itself", path: "/", wantOutside: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := j.read(tt.path, tt.line, tt.limit)
			switch {
			case tt.wantOutside:
				if !errors.Is(err, errOutside) {
					t.Fatalf("read(%s): got %q, %v want errOutside", tt.path, got, err)
				}
			case tt.wantErr:
				if err == nil || errors.Is(err, errOutside) {
					t.Fatalf("read(%s): got %q, %v want a plain error", tt.path, got, err)
				}
			case err != nil:
				t.Fatalf("read(%s): %v", tt.path, err)
			case got != tt.want:
				t.Errorf("read(%s, %d, %d): got %q want %q", tt.path, tt.line, tt.limit, got, tt.want)
			}
		})
	}
}

func TestJailWrite(t *testing.T) {
	t.Parallel()
	j, root, outside := jailRig(t)
	tests := []struct {
		name        string
		path        string
		wantOutside bool
		check       string // the real file that must now hold the content
	}{
		{name: "new file", path: filepath.Join(root, "new.txt"), check: filepath.Join(root, "new.txt")},
		{name: "new file in new dirs", path: filepath.Join(root, "x", "y", "z.txt"), check: filepath.Join(root, "x", "y", "z.txt")},
		{name: "through inside symlink", path: filepath.Join(root, "alias.txt"), check: filepath.Join(root, "a.txt")},
		{name: "outside", path: filepath.Join(outside, "w.txt"), wantOutside: true},
		{name: "symlinked file escape", path: filepath.Join(root, "escape.txt"), wantOutside: true},
		{name: "new file in symlinked dir", path: filepath.Join(root, "escape-dir", "w.txt"), wantOutside: true},
		{name: "dangling symlink", path: filepath.Join(root, "dangling.txt"), wantOutside: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := j.write(tt.path, "written")
			if tt.wantOutside {
				if !errors.Is(err, errOutside) {
					t.Fatalf("write(%s): got %v want errOutside", tt.path, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("write(%s): %v", tt.path, err)
			}
			b, err := os.ReadFile(tt.check)
			if err != nil || string(b) != "written" {
				t.Errorf("%s after write: got %q, %v want %q", tt.check, b, err, "written")
			}
		})
	}
	// Nothing outside changed.
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("files outside after the writes: got %d want 1", len(entries))
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "secret\n" {
		t.Errorf("secret.txt: got %q want it untouched", b)
	}
}
