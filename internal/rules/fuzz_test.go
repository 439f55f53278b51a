package rules

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

// Fuzzed command lines never make an allow out of a deny: with `rm *`
// denied and everything else allowed, a line (alone, or joined with rm in
// several ways) is allowed only when no simple command in it, as the shell
// parser reads it, runs rm.
func FuzzDecideNeverAllowsADenied(f *testing.F) {
	for _, s := range []string{"go test ./...", "ls | sort", "echo 'rm -rf /'", `bash -c "ls"`, "cat <<EOF\nx\nEOF",
		"a=1 b=2", "(ls)", "{ ls; }", "if a; then b; fi", "x && y || z", "echo $(id)", "r\\m -rf x", "sudo -u x ls"} {
		f.Add(s)
	}
	rules := []Rule{{Action: Deny, Command: "rm *"}, {Action: Allow, Command: "*"}}
	c := testCall(f)
	now := time.Now()
	f.Fuzz(func(t *testing.T, line string) {
		if len(line) > 4096 {
			return
		}
		c := c
		// The line, and the line joined with a denied command in ways the
		// shell may or may not run it (after a comment, inside a quote).
		for _, l := range []string{line, line + "\nrm -rf x", line + " ; rm -rf x", "rm -rf x; " + line,
			line + " && rm x", "rm x | " + line, "(" + line + ") ; rm x", "echo $(rm x) " + line} {
			c.Command = l
			if v := Decide(rules, c, now); v.Action == Allow && runsRm(l) {
				t.Fatalf("%q allowed by %s, and it runs rm", l, v.By())
			}
		}
	})
}

// runsRm reads a line as the shell would and says whether any simple
// command in it (quotes removed) is rm.
func runsRm(line string) bool {
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return false
	}
	found := false
	syntax.Walk(file, func(n syntax.Node) bool {
		if call, ok := n.(*syntax.CallExpr); ok && len(call.Args) > 0 {
			if name, err := word(call.Args[0]); err == nil && filepath.Base(name) == "rm" {
				found = true
			}
		}
		return true
	})
	return found
}
