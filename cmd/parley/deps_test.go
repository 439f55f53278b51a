package main

import (
	"os/exec"
	"strings"
	"testing"
)

// parley links no syntax highlighter: chroma's init (~250 lexers and ~70
// styles parsed from embedded XML) ran before main in every parley process,
// serve's included, for the terminal UI's code colors (issue 29). Nor
// goldmark's extension package, whose linkify expressions cost 1–2 ms at init.
func TestNoHighlighterLinked(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "github.com/yuin/goldmark/extension" {
			t.Errorf("parley links %s", p)
		}
		for _, heavy := range []string{"github.com/alecthomas/chroma", "charm.land/glamour", "github.com/microcosm-cc/bluemonday"} {
			if strings.HasPrefix(p, heavy) {
				t.Errorf("parley links %s", p)
			}
		}
	}
}
