package ui

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

func TestFSHasTheBundle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path string
		want string // a string the file must contain
	}{
		{"index.html", `<div id="app">`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			b, err := fs.ReadFile(FS(), tt.path)
			if err != nil {
				t.Fatalf("got error %v, want %s in the bundle", err, tt.path)
			}
			if !strings.Contains(string(b), tt.want) {
				t.Errorf("got %s without %q", tt.path, tt.want)
			}
		})
	}
	js, _ := fs.Glob(FS(), "assets/*.js")
	if len(js) == 0 {
		t.Errorf("got no assets/*.js, want the built script")
	}
}

func TestHash(t *testing.T) {
	t.Parallel()
	h := Hash()
	if len(h) != 64 {
		t.Fatalf("got hash %q, want 64 hex digits", h)
	}
	if h2 := Hash(); h2 != h {
		t.Errorf("got %s then %s, want one stable hash", h, h2)
	}
	a := fstest.MapFS{"a": {Data: []byte("x")}, "b": {Data: []byte("y")}}
	tests := []struct {
		name string
		fs   fstest.MapFS
		same bool
	}{
		{"same files", fstest.MapFS{"a": {Data: []byte("x")}, "b": {Data: []byte("y")}}, true},
		{"content changed", fstest.MapFS{"a": {Data: []byte("x")}, "b": {Data: []byte("z")}}, false},
		{"bytes moved between files", fstest.MapFS{"a": {Data: []byte("xy")}, "b": {Data: []byte("")}}, false},
		{"file renamed", fstest.MapFS{"a": {Data: []byte("x")}, "c": {Data: []byte("y")}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hashFS(tt.fs) == hashFS(a); got != tt.same {
				t.Errorf("got equal=%v, want %v", got, tt.same)
			}
		})
	}
}
