package procgroup_test

import (
	"fmt"
	"go/ast"
	"go/types"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// Every program parley runs is an argv: no shell between user text and a
// process, and no tmux format expansion of user text. This walks every call
// site in the tree (test files aside) with types, and fails on:
//   - sh/bash -c with a script that is not a constant;
//   - a tmux argv whose -F format, display-message -p format, or send-keys
//     key (send-keys without -l) is not a constant or a number;
//   - ctl's SendKeys/SendKeysN given a key that is not a constant or a number.
//
// "A number" is strconv.Itoa of something, or a variable every assignment of
// which is a constant or a number (a local helper's parameter counts when
// every call passes one).
func TestEveryProgramIsAnArgv(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("type-checks the whole tree")
	}
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Dir: "../.."}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	calls := 0
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Fatalf("%s: %v", p.PkgPath, e)
		}
		w := walker{p: p}
		for _, f := range p.Syntax {
			ast.Inspect(f, func(n ast.Node) bool {
				if fd, ok := n.(*ast.FuncDecl); ok {
					w.fn = fd
				}
				if c, ok := n.(*ast.CallExpr); ok {
					if w.check(c) {
						calls++
					}
				}
				return true
			})
		}
		problems = append(problems, w.problems...)
	}
	if calls < 5 {
		t.Fatalf("found only %d exec call sites: the walker no longer finds them", calls)
	}
	for _, pr := range problems {
		t.Error(pr)
	}
}

type walker struct {
	p        *packages.Package
	fn       *ast.FuncDecl
	problems []string
}

func (w *walker) fail(n ast.Node, format string, a ...any) {
	w.problems = append(w.problems, w.p.Fset.Position(n.Pos()).String()+": "+fmt.Sprintf(format, a...))
}

// callee names what c calls: "os/exec.Command", "(*pkg.Client).Run", ….
func (w *walker) callee(c *ast.CallExpr) string {
	var id *ast.Ident
	switch f := c.Fun.(type) {
	case *ast.Ident:
		id = f
	case *ast.SelectorExpr:
		id = f.Sel
	default:
		return ""
	}
	fn, ok := w.p.TypesInfo.Uses[id].(*types.Func)
	if !ok {
		return ""
	}
	return fn.FullName()
}

const ctlPkg = "github.com/parleyhq/parley/internal/driver/tmux/ctl"

// check checks one call; it reports whether the call runs a program.
func (w *walker) check(c *ast.CallExpr) bool {
	name := w.callee(c)
	switch name {
	case "os/exec.Command":
		w.argv(c, c.Args, 0)
	case "os/exec.CommandContext":
		w.argv(c, c.Args, 1)
	case "github.com/parleyhq/parley/internal/procgroup.Command":
		w.argv(c, c.Args, 3)
	case "(*" + ctlPkg + ".Client).Run", "(*" + ctlPkg + ".Client).command":
		w.tmux(c, w.flatten(c.Args[1:], c.Ellipsis.IsValid()))
	case "(*" + ctlPkg + ".Client).RunInput":
		w.tmux(c, w.flatten(c.Args[2:], c.Ellipsis.IsValid()))
	case "(*" + ctlPkg + ".Client).SendKeys":
		for _, k := range c.Args[2:] {
			if !w.keyLike(k) {
				w.fail(k, "SendKeys with a key that is not a constant or a number: %s (tmux reads key names; send text with SendLiteral)", w.src(k))
			}
		}
		return false
	case "(*" + ctlPkg + ".Client).SendKeysN":
		if !w.keyLike(c.Args[2]) {
			w.fail(c.Args[2], "SendKeysN with a key that is not a constant: %s", w.src(c.Args[2]))
		}
		return false
	default:
		return false
	}
	return true
}

// flatten turns call arguments into an argv: a spread append([]string{…},
// rest...) gives its literal's words then one unknown (nil) for the rest.
func (w *walker) flatten(args []ast.Expr, spread bool) []ast.Expr {
	if !spread || len(args) == 0 {
		return args
	}
	last := args[len(args)-1]
	out := slices.Clone(args[:len(args)-1])
	switch l := ast.Unparen(last).(type) {
	case *ast.CompositeLit:
		return append(out, l.Elts...)
	case *ast.CallExpr:
		if id, ok := l.Fun.(*ast.Ident); ok && id.Name == "append" && len(l.Args) > 0 {
			return append(out, w.flatten(l.Args, l.Ellipsis.IsValid())...)
		}
	}
	return append(out, nil)
}

func (w *walker) constant(e ast.Expr) (string, bool) {
	if e == nil {
		return "", false
	}
	tv, ok := w.p.TypesInfo.Types[e]
	if !ok || tv.Value == nil {
		return "", false
	}
	s := tv.Value.ExactString()
	return strings.Trim(s, `"`), true
}

func (w *walker) src(e ast.Expr) string {
	if e == nil {
		return "(a spread argument)"
	}
	return types.ExprString(e)
}

var shells = map[string]bool{"sh": true, "bash": true, "/bin/sh": true, "/bin/bash": true, "dash": true, "zsh": true}

// argv checks a program and its arguments (args[prog] is the program).
func (w *walker) argv(c *ast.CallExpr, args []ast.Expr, prog int) {
	if len(args) <= prog {
		return
	}
	rest := w.flatten(args[prog+1:], c.Ellipsis.IsValid())
	name, _ := w.constant(args[prog])
	if shells[name] {
		for i, a := range rest {
			if s, _ := w.constant(a); s == "-c" {
				if i+1 >= len(rest) {
					w.fail(c, "%s -c with its script in a spread argument", name)
				} else if _, ok := w.constant(rest[i+1]); !ok {
					w.fail(rest[i+1], "%s -c with a script that is not a constant: %s", name, w.src(rest[i+1]))
				}
			}
		}
		return
	}
	if name == "tmux" {
		w.tmux(c, rest)
	}
}

// tmux checks a tmux argv for places tmux expands formats or reads key names.
func (w *walker) tmux(c *ast.CallExpr, args []ast.Expr) {
	words := make([]string, len(args))
	for i, a := range args {
		words[i], _ = w.constant(a)
	}
	literal := slices.Contains(words, "-l")
	sub := ""
	for i, a := range args {
		word := words[i]
		if sub == "" {
			switch word {
			case "send-keys", "send", "display-message", "display", "list-panes", "list-sessions", "list-windows", "new-session", "set-option":
				sub = word
			}
			if word != "-F" {
				continue
			}
		}
		prev := ""
		if i > 0 {
			prev = words[i-1]
		}
		switch {
		case word == "-F" && i+1 < len(args):
			if _, ok := w.constant(args[i+1]); !ok {
				w.fail(args[i+1], "tmux -F with a format that is not a constant: %s", w.src(args[i+1]))
			}
		case prev == "-t" || prev == "-N" || prev == "-b" || prev == "-s" || prev == "-x" || prev == "-y" || prev == "-e" || prev == "-F":
			// a target, a count, a buffer or a session name (ValidName), a size, an env pair
		case strings.HasPrefix(word, "-") && word != "":
		case (sub == "display-message" || sub == "display") && slices.Contains(words, "-p"):
			if _, ok := w.constant(a); !ok {
				w.fail(a, "tmux display-message -p with a format that is not a constant: %s", w.src(a))
			}
		case (sub == "send-keys" || sub == "send") && !literal && a != nil && !w.inKeyWrapper():
			if !w.keyLike(a) {
				w.fail(a, "tmux send-keys without -l given %s, which is not a key name parley chose", w.src(a))
			}
		}
	}
}

// inKeyWrapper: ctl's SendKeys and SendKeysN pass their callers' keys on;
// those callers are checked instead.
func (w *walker) inKeyWrapper() bool {
	return w.p.PkgPath == ctlPkg && w.fn != nil && w.fn.Recv != nil && (w.fn.Name.Name == "SendKeys" || w.fn.Name.Name == "SendKeysN")
}

// keyLike: a constant, a number, or a variable only ever set to one of those.
func (w *walker) keyLike(e ast.Expr) bool {
	return w.keyLikeDepth(e, 0)
}

func (w *walker) keyLikeDepth(e ast.Expr, depth int) bool {
	if e == nil || depth > 3 {
		return false
	}
	if _, ok := w.constant(e); ok {
		return true
	}
	e = ast.Unparen(e)
	if c, ok := e.(*ast.CallExpr); ok {
		switch w.callee(c) {
		case "strconv.Itoa", "strconv.FormatInt":
			return true
		}
		return false
	}
	id, ok := e.(*ast.Ident)
	if !ok || w.fn == nil {
		return false
	}
	obj := w.p.TypesInfo.Uses[id]
	if obj == nil {
		return false
	}
	// Every assignment to it in the enclosing function, or every call of
	// the local helper it is a parameter of.
	good, seen := true, false
	ast.Inspect(w.fn, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.AssignStmt:
			for i, l := range s.Lhs {
				lid, ok := l.(*ast.Ident)
				if !ok || (w.p.TypesInfo.Defs[lid] != obj && w.p.TypesInfo.Uses[lid] != obj) {
					continue
				}
				seen = true
				if len(s.Rhs) != len(s.Lhs) || !w.keyLikeDepth(s.Rhs[i], depth+1) {
					good = false
				}
			}
			// key := func(k string) error {…}: k is what its calls pass.
			for i, r := range s.Rhs {
				fl, ok := r.(*ast.FuncLit)
				if !ok || i >= len(s.Lhs) {
					continue
				}
				pi := paramIndex(w.p.TypesInfo, fl, obj)
				if pi < 0 {
					continue
				}
				helper := w.p.TypesInfo.Defs[s.Lhs[i].(*ast.Ident)]
				ast.Inspect(w.fn, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					if hid, ok := call.Fun.(*ast.Ident); ok && w.p.TypesInfo.Uses[hid] == helper {
						seen = true
						if pi >= len(call.Args) || !w.keyLikeDepth(call.Args[pi], depth+1) {
							good = false
						}
					}
					return true
				})
			}
		case *ast.RangeStmt:
			if v, ok := s.Value.(*ast.Ident); ok && w.p.TypesInfo.Defs[v] == obj {
				seen, good = true, false // a range over data: not known
			}
		}
		return true
	})
	return seen && good
}

func paramIndex(info *types.Info, fl *ast.FuncLit, obj types.Object) int {
	i := 0
	for _, f := range fl.Type.Params.List {
		for _, n := range f.Names {
			if info.Defs[n] == obj {
				return i
			}
			i++
		}
	}
	return -1
}
