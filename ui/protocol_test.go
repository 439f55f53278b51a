package ui

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The dashboard's ServerEvent (src/protocol.ts) names every event type the
// daemon sends (chat's Type* constants), and no other: a type added in Go and
// forgotten in the dashboard fails here, not in a person's browser.
func TestDashboardNamesEveryChatEventType(t *testing.T) {
	t.Parallel()
	want := chatEventTypes(t)
	src, err := os.ReadFile(filepath.Join("src", "protocol.ts"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	start := strings.Index(s, "export type ServerEvent")
	end := strings.Index(s[max(start, 0):], ");")
	if start < 0 || end < 0 {
		t.Fatal("no `export type ServerEvent = …;` in src/protocol.ts")
	}
	var have []string
	for _, m := range regexp.MustCompile(`type: "([a-z_]+)"`).FindAllStringSubmatch(s[start:start+end], -1) {
		have = append(have, m[1])
	}
	for name, typ := range want {
		if !slices.Contains(have, typ) {
			t.Errorf("chat.%s (%q) is not in src/protocol.ts's ServerEvent", name, typ)
		}
	}
	for _, typ := range have {
		found := false
		for _, w := range want {
			found = found || w == typ
		}
		if !found {
			t.Errorf("src/protocol.ts's ServerEvent has %q, which is no chat event type", typ)
		}
	}
}

// chatEventTypes reads chat's Type* string constants from its source.
func chatEventTypes(t *testing.T) map[string]string {
	t.Helper()
	dir := filepath.Join("..", "internal", "chat")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Type") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						types[n.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
	}
	if len(types) < 10 {
		t.Fatalf("found %d chat event types in %s: the test no longer reads them", len(types), dir)
	}
	return types
}
