package router

import "testing"

func TestTitleOf(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"fix the build":                "fix the build",
		"  first line\nsecond line":    "first line",
		"":                             "",
		"a " + string(make([]byte, 0)): "a",
		"word word word word word word word word word word word word word word word word word word": "word word word word word word word word word word word word word word word word…",
	}
	for in, want := range cases {
		if got := titleOf(in); got != want {
			t.Errorf("titleOf(%q) = %q, want %q", in, got, want)
		}
	}
}
