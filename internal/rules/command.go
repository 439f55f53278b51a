package rules

import (
	"fmt"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// simple is one simple command of a shell command line: its words with
// quotes removed.
type simple struct {
	words []string
}

// pathRef is a word that may name a file: an argument, an option's value or
// a redirection's file. afterCd: a cd came before it in the line, so where
// a relative path leads is not known from the line alone.
type pathRef struct {
	text    string
	afterCd bool
}

// parsed is what a command line holds, as far as parley can read it.
type parsed struct {
	cmds  []simple
	paths []pathRef
	moved bool // a cd or pushd ran before the current word
	// unreadable says why some part's meaning is only known when it runs
	// (an expansion, a substitution, a function): such a line is never
	// allowed by a rule, only denied or asked.
	unreadable string
}

// riskyAssigns are environment prefixes that change which program runs or
// what it loads: `PATH=/tmp/x go test` is not `go test`.
var riskyAssigns = map[string]bool{"PATH": true, "LD_PRELOAD": true, "LD_LIBRARY_PATH": true, "LD_AUDIT": true,
	"BASH_ENV": true, "ENV": true, "IFS": true, "SHELLOPTS": true, "BASHOPTS": true, "PROMPT_COMMAND": true,
	"GIT_SSH_COMMAND": true, "GIT_EXEC_PATH": true, "PYTHONPATH": true, "NODE_OPTIONS": true, "PERL5OPT": true}

// shells run their -c argument as a command line, eval its arguments: what
// they run is read too, so a deny reaches inside (`bash -c "rm -rf ~"`).
var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true}

// parse reads a command line with a real shell parser (bash syntax). Depth
// bounds the nesting of `bash -c` inside `bash -c`.
func parse(line string, depth int) parsed {
	var p parsed
	if depth > 3 {
		p.cannot("shells nested too deep")
		return p
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		p.cannot(fmt.Sprintf("not a command line parley can read: %v", err))
		return p
	}
	// The walk goes on past what cannot be read: a deny still sees the
	// commands around it (and the names of those with unreadable words).
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			p.redirects(n)
		case *syntax.CallExpr:
			p.call(n, depth)
		case *syntax.FuncDecl:
			p.cannot("it defines a function")
		case *syntax.CoprocClause:
			p.cannot("it starts a coprocess")
		case *syntax.DeclClause:
			p.cannot(fmt.Sprintf("it declares variables (%s)", n.Variant.Value))
		case *syntax.LetClause, *syntax.ArithmCmd:
			p.cannot("it evaluates arithmetic")
		case *syntax.ParamExp:
			p.cannot("it expands a variable")
		case *syntax.CmdSubst:
			p.cannot("it substitutes a command's output")
		case *syntax.ProcSubst:
			p.cannot("it substitutes a process")
		case *syntax.ArithmExp:
			p.cannot("it expands arithmetic")
		case *syntax.ExtGlob:
			p.cannot("it uses an extended glob")
		case *syntax.TestClause:
			// [[ … ]] runs nothing; its words are read by the walk.
		}
		return true
	})
	return p
}

// word is a word's text, quotes removed, or an error when only running it
// would tell (anything but literal text and quotes).
func word(w *syntax.Word) (string, error) {
	for _, part := range w.Parts {
		switch part := part.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(part.Value, "{") && part.Value != "{}" {
				return "", fmt.Errorf("it uses brace expansion (%s)", part.Value)
			}
		case *syntax.SglQuoted:
			if part.Dollar {
				return "", fmt.Errorf("it uses $'…' quoting")
			}
		case *syntax.DblQuoted:
			if part.Dollar {
				return "", fmt.Errorf("it uses $\"…\" quoting")
			}
			for _, in := range part.Parts {
				if _, ok := in.(*syntax.Lit); !ok {
					return "", fmt.Errorf("it expands inside quotes")
				}
			}
		default:
			return "", fmt.Errorf("it expands a word")
		}
	}
	if lit, ok := w.Parts[0].(*syntax.Lit); ok && strings.HasPrefix(lit.Value, "~") {
		rest := lit.Value[1:]
		if rest != "" && !strings.HasPrefix(rest, "/") {
			return "", fmt.Errorf("it names another user's home (%s)", lit.Value)
		}
	}
	// A config of its own each time: with nil, the library writes to a
	// package-level one, a data race between lanes deciding at once.
	s, err := expand.Literal(&expand.Config{}, w)
	if err != nil {
		return "", fmt.Errorf("it expands a word: %v", err)
	}
	return s, nil
}

// cannot notes the first reason the line cannot be read whole.
func (p *parsed) cannot(why string) {
	if p.unreadable == "" {
		p.unreadable = why
	}
}

// unknownWord stands for a word only running would tell: it matches a
// pattern's `*` and nothing else.
const unknownWord = "\x00"

func (p *parsed) call(c *syntax.CallExpr, depth int) {
	for _, a := range c.Assigns {
		if a.Name == nil || riskyAssigns[a.Name.Value] || a.Array != nil || a.Index != nil {
			p.cannot("it sets an environment variable that changes what runs")
		}
		if a.Value != nil {
			if _, err := word(a.Value); err != nil {
				p.cannot(err.Error())
			}
		}
	}
	if len(c.Args) == 0 {
		return // only assignments: they set shell variables, nothing runs
	}
	var s simple
	for _, w := range c.Args {
		text, err := word(w)
		if err != nil {
			p.cannot(err.Error())
			text = unknownWord
		}
		s.words = append(s.words, text)
	}
	for _, w := range s.words[1:] {
		for _, path := range pathsIn(w) {
			p.paths = append(p.paths, pathRef{path, p.moved})
		}
	}
	p.cmds = append(p.cmds, s)
	if n := filepath.Base(s.words[0]); n == "cd" || n == "pushd" || n == "popd" {
		p.moved = true
	}
	// What a shell or eval runs is read as well (for denies).
	name := filepath.Base(s.words[0])
	var inner string
	switch {
	case shells[name]:
		// -c, or -c among other one-letter flags (bash -lc "…"): the next
		// word is the line it runs.
		for i, w := range s.words[1:] {
			if strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") && strings.Contains(w, "c") && i+2 < len(s.words) {
				inner = s.words[i+2]
				break
			}
		}
	case name == "eval":
		inner = strings.Join(s.words[1:], " ")
	}
	if inner != "" {
		in := parse(inner, depth+1)
		p.cmds = append(p.cmds, in.cmds...)
		p.paths = append(p.paths, in.paths...)
		if in.unreadable != "" {
			p.cannot(in.unreadable)
		}
	}
}

// redirects notes the files a statement's redirections read or write.
func (p *parsed) redirects(st *syntax.Stmt) {
	for _, r := range st.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.DplIn, syntax.DplOut:
			// A here-document or a copy of a descriptor names no file.
			if r.Hdoc != nil && !allLit(r.Hdoc) {
				p.cannot("its here-document expands")
			}
			continue
		}
		if r.Word == nil {
			continue
		}
		text, err := word(r.Word)
		if err != nil {
			p.cannot(err.Error())
			continue
		}
		if text == "/dev/null" {
			continue
		}
		p.paths = append(p.paths, pathRef{text, p.moved})
	}
}

// allLit says a here-document body has no expansion.
func allLit(w *syntax.Word) bool {
	for _, part := range w.Parts {
		if _, ok := part.(*syntax.Lit); !ok {
			return false
		}
	}
	return true
}

// pathsIn gives the paths an argument names: the argument itself when it
// looks like a path, or the value of an --opt=value that does.
func pathsIn(arg string) []string {
	if strings.HasPrefix(arg, "-") {
		if _, v, ok := strings.Cut(arg, "="); ok {
			arg = v
		} else {
			return nil
		}
	}
	if arg == "" {
		return nil
	}
	return []string{arg}
}
