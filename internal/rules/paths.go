package rules

import (
	"os"
	"path/filepath"
	"strings"
)

// texts are the words of a line that may name files.
func (p parsed) texts() []string {
	out := make([]string, len(p.paths))
	for i, r := range p.paths {
		out[i] = r.text
	}
	return out
}

// resolve makes a path absolute (~ is the home, relative is in the thread's
// directory) and follows the symlinks of the part that exists, so a link
// inside the directory that leads out counts as out.
func resolve(path string, c Call) string {
	switch {
	case path == "~" || strings.HasPrefix(path, "~/"):
		path = filepath.Join(c.Home, path[1:])
	case !filepath.IsAbs(path):
		path = filepath.Join(c.Dir, path)
	}
	path = filepath.Clean(path)
	var rest []string
	for dir := path; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		if dir == filepath.Dir(dir) {
			return path
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
	}
}

// within says path is dir or inside it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(os.PathSeparator)) && !filepath.IsAbs(rel)
}

// inRoots says a resolved path is inside one of the roots.
func inRoots(path string, c Call) bool {
	for _, r := range c.Roots {
		if within(path, resolve(r, c)) {
			return true
		}
	}
	return false
}

// outside gives the first of a file tool's paths outside the roots, or "".
func outside(paths []string, c Call) string {
	for _, p := range paths {
		if !inRoots(resolve(p, c), c) {
			return p
		}
	}
	return ""
}

// outsidePath gives a command line's word when it may lead outside the
// roots, or "": resolved outside them; a relative path climbing with ..
// after a cd (the line moved: the word's start is not the thread's
// directory); a glob whose part starts with a dot (it may match ..).
func outsidePath(p pathRef, c Call) string {
	parts := strings.Split(p.text, "/")
	for _, part := range parts {
		if strings.HasPrefix(part, ".") && strings.ContainsAny(part, "*?[") {
			return p.text
		}
		if part == ".." && p.afterCd {
			return p.text
		}
	}
	if !inRoots(resolve(p.text, c), c) {
		return p.text
	}
	return ""
}

// pathsMatch says a rule's paths hold every path of a call. A rule without
// paths holds: for an allow of a file tool, the thread's directory; else
// anything.
func pathsMatch(r Rule, paths []string, c Call) bool {
	if len(r.Paths) == 0 {
		if r.Action != Allow || c.Command != "" {
			return true
		}
		dir := resolve(c.Dir, c)
		for _, p := range paths {
			if !within(resolve(p, c), dir) {
				return false
			}
		}
		return true
	}
	for _, p := range paths {
		real := resolve(p, c)
		ok := false
		for _, pat := range r.Paths {
			if !filepath.IsAbs(pat) && !strings.HasPrefix(pat, "~") {
				pat = filepath.Join(c.Dir, pat)
			} else if strings.HasPrefix(pat, "~") {
				pat = filepath.Join(c.Home, pat[1:])
			}
			ok = ok || glob(pat, real) || glob(filepath.Clean(pat), filepath.Clean(filepath.Join(c.Dir, p)))
		}
		if !ok {
			return false
		}
	}
	return true
}
