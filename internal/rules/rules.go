// Package rules answers permission cards by rules a person wrote: allow,
// deny or ask, matched on the agent, the machine, the tool, the command (read
// with a real shell parser, word by word, never as a substring) and the paths
// a call touches. A rule never allows anything outside the thread's roots,
// and a line parley cannot read is never allowed.
package rules

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Actions.
const (
	Allow = "allow"
	Deny  = "deny"
	Ask   = "ask"
)

// Rule is one [[rule]] of the config or one made from a card. Empty fields
// match anything.
type Rule struct {
	Action  string   `toml:"action" json:"action"`
	Agent   string   `toml:"agent" json:"agent,omitempty"`     // an agent id, or a glob
	Machine string   `toml:"machine" json:"machine,omitempty"` // a node name, or a glob
	Tool    string   `toml:"tool" json:"tool,omitempty"`       // Bash, Edit, an ACP tool kind, an MCP tool; a glob
	Command string   `toml:"command" json:"command,omitempty"` // shell words; `*` alone at the end matches the rest
	Paths   []string `toml:"paths" json:"paths,omitempty"`     // globs; relative ones are inside the thread's directory
	For     string   `toml:"for" json:"for,omitempty"`         // how long it holds from Since, e.g. "1h"; "" for ever
	// Since is when it started to hold (the config's load, a card's answer).
	Since time.Time `toml:"-" json:"since,omitempty"`
}

// Check says what is wrong with a rule, for the config's and the editor's
// errors.
func (r Rule) Check() error {
	switch r.Action {
	case Allow, Deny, Ask:
	default:
		return fmt.Errorf("action %q: want allow, deny or ask", r.Action)
	}
	if r.For != "" {
		d, err := time.ParseDuration(r.For)
		if err != nil || d <= 0 {
			return fmt.Errorf("for %q: want a duration such as 30m or 8h", r.For)
		}
	}
	if r.Command != "" {
		p := parse(r.Command, 0)
		if p.unreadable != "" || len(p.cmds) != 1 {
			return fmt.Errorf("command %q: want one simple command of plain words (e.g. \"go test *\")", r.Command)
		}
	}
	for _, pat := range r.Paths {
		if _, err := filepath.Match(pat, ""); err != nil {
			return fmt.Errorf("paths %q: %v", pat, err)
		}
	}
	return nil
}

// String is the rule as a person reads it in a card's answer.
func (r Rule) String() string {
	var b strings.Builder
	b.WriteString(r.Action)
	for _, kv := range [][2]string{{"agent", r.Agent}, {"machine", r.Machine}, {"tool", r.Tool}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, " %s=%s", kv[0], kv[1])
		}
	}
	if r.Command != "" {
		fmt.Fprintf(&b, " %q", r.Command)
	}
	if len(r.Paths) > 0 {
		fmt.Fprintf(&b, " paths=%s", strings.Join(r.Paths, ","))
	}
	if r.For != "" {
		fmt.Fprintf(&b, " for %s", r.For)
	}
	return b.String()
}

// expired says the rule no longer holds at now.
func (r Rule) expired(now time.Time) bool {
	if r.For == "" {
		return false
	}
	d, err := time.ParseDuration(r.For)
	return err != nil || now.After(r.Since.Add(d))
}

// Call is a tool call a card asks about.
type Call struct {
	Agent, Machine string
	Tool           string   // the tool's name or ACP kind
	Command        string   // a shell command line (Bash, an ACP execute), or ""
	Paths          []string // the files a file tool touches
	Dir            string   // the thread's directory
	Roots          []string // the machine's roots (a rule never reaches beyond them)
	Home           string   // for ~ in commands
}

// Verdict is a rule's answer to a call. Rule is its number, from 1 in the
// order the rules are given; 0 when no rule answered (Action is Ask).
type Verdict struct {
	Action string
	Rule   int
	Text   string // the rule as String says it
	Reason string // why, for the agent when denied and for `parley rules test`
}

// By is how a card's answer names the rule: "rule 2 (allow tool=Bash "go test *")".
func (v Verdict) By() string { return fmt.Sprintf("rule %d (%s)", v.Rule, v.Text) }

// Decide answers a call by rules, in their order. A command line is allowed
// only when every simple command in it is allowed by some rule; a deny
// matching any part of it wins; a line parley cannot read, or a path
// outside the roots, is never allowed. Otherwise the first matching rule
// answers, and no match asks.
func Decide(rules []Rule, c Call, now time.Time) Verdict {
	type numbered struct {
		n int
		r Rule
	}
	var live []numbered
	for i, r := range rules {
		if r.Check() == nil && !r.expired(now) && glob(r.Agent, c.Agent) && glob(r.Machine, c.Machine) && toolMatch(r.Tool, c.Tool) {
			live = append(live, numbered{i + 1, r})
		}
	}
	answer := func(nr numbered, reason string) Verdict {
		return Verdict{Action: nr.r.Action, Rule: nr.n, Text: nr.r.String(), Reason: reason}
	}
	ask := func(reason string) Verdict { return Verdict{Action: Ask, Reason: reason} }

	if c.Command == "" {
		// A file tool (or a tool with no command): the first rule whose
		// paths hold every path the call touches.
		for _, nr := range live {
			if nr.r.Command != "" || !pathsMatch(nr.r, c.Paths, c) {
				continue
			}
			if nr.r.Action == Allow {
				if out := outside(c.Paths, c); out != "" {
					return ask(fmt.Sprintf("%s is outside this thread's roots: no rule allows it", out))
				}
			}
			return answer(nr, "")
		}
		return ask("no rule matches")
	}

	line := parse(c.Command, 0)
	// A deny on any part wins, even inside what parley cannot read whole.
	for _, s := range line.cmds {
		for _, words := range unwrapped(s.words) {
			for _, nr := range live {
				if nr.r.Action == Deny && commandMatch(nr.r.Command, words) && pathsMatch(nr.r, line.texts(), c) {
					return answer(nr, fmt.Sprintf("%q is denied", strings.Join(words, " ")))
				}
			}
		}
	}
	if line.unreadable != "" {
		return ask(line.unreadable)
	}
	if len(line.cmds) == 0 {
		return ask("no command in it")
	}
	// Each simple command's first matching rule; every one must allow.
	var first *numbered
	for _, s := range line.cmds {
		var got *numbered
		for i := range live {
			if commandMatch(live[i].r.Command, s.words) && pathsMatch(live[i].r, line.texts(), c) {
				got = &live[i]
				break
			}
		}
		if got == nil {
			return ask(fmt.Sprintf("no rule matches %q", strings.Join(s.words, " ")))
		}
		if got.r.Action != Allow {
			return answer(*got, "")
		}
		if first == nil {
			first = got
		}
	}
	for _, p := range line.paths {
		if out := outsidePath(p, c); out != "" {
			return ask(fmt.Sprintf("%s may be outside this thread's roots: no rule allows it", out))
		}
	}
	return answer(*first, "")
}

// wrappers run the command in their arguments: a deny of `rm *` also
// reaches `sudo -u root rm -rf /` and `xargs rm`.
var wrappers = map[string]bool{"sudo": true, "doas": true, "env": true, "nohup": true, "time": true, "nice": true,
	"ionice": true, "timeout": true, "xargs": true, "exec": true, "command": true, "builtin": true, "stdbuf": true,
	"setsid": true, "chrt": true, "taskset": true, "watch": true, "busybox": true}

// unwrapped gives a command's words and, when a wrapper leads them, every
// tail after it: which of its words are the wrapper's own options is
// each wrapper's business, so a deny is tried against them all (a deny
// may then reach further than meant, never less).
func unwrapped(words []string) [][]string {
	out := [][]string{words}
	if len(words) > 1 && wrappers[filepath.Base(words[0])] {
		for i := 1; i < len(words); i++ {
			out = append(out, words[i:])
		}
	}
	return out
}

// commandMatch matches a rule's command pattern against a simple command's
// words: word by word, each a glob, and `*` alone as the last word matches
// whatever words follow (none included). An empty pattern matches any
// command. The program's own name matches by its base (`go` is `/usr/bin/go`).
func commandMatch(pattern string, words []string) bool {
	if pattern == "" {
		return true
	}
	pat := parse(pattern, 0)
	if pat.unreadable != "" || len(pat.cmds) != 1 {
		return false
	}
	pw := pat.cmds[0].words
	if len(words) == 0 {
		return false
	}
	words = append([]string{filepath.Base(words[0])}, words[1:]...)
	for i, p := range pw {
		if p == "*" && i == len(pw)-1 {
			return true
		}
		if i >= len(words) || !glob(p, words[i]) {
			return false
		}
	}
	return len(words) == len(pw)
}

// toolMatch matches a rule's tool against a call's, case-insensitively.
func toolMatch(pattern, tool string) bool {
	return glob(strings.ToLower(pattern), strings.ToLower(tool))
}

// glob matches s against a pattern where * is any run of characters and ?
// one character; "" matches anything. Iterative, so no pattern is slow.
func glob(pattern, s string) bool {
	if pattern == "" {
		return true
	}
	p, i, star, mark := 0, 0, -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
