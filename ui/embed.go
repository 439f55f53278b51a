// Package ui holds the dashboard: its TypeScript source beside this file and the
// built bundle in dist/, committed and embedded so that `go install` and
// `parley serve` need no Node. `npm run build` (make ui) rebuilds dist/.
package ui

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"sort"
	"sync"
)

//go:embed all:dist
var dist embed.FS

// FS returns the bundle rooted at dist/: index.html and assets/ (with .gz twins).
func FS() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic("ui: dist missing from the embedded files: " + err.Error()) // cannot happen: the embed pattern names it
	}
	return sub
}

// Hash is the sha256 of the bundle (every file's path and contents, in path order),
// computed once; /api/version reports it so a person can tell which bundle runs.
func Hash() string { return hashOnce() }

var hashOnce = sync.OnceValue(func() string { return hashFS(FS()) })

func hashFS(fsys fs.FS) string {
	var paths []string
	_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			paths = append(paths, p)
		}
		return nil
	})
	sort.Strings(paths)
	h := sha256.New()
	for _, p := range paths {
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			continue
		}
		// Length-prefixed so that moving bytes between a name and a body changes the hash.
		h.Write([]byte(p))
		h.Write([]byte{0})
		var n [8]byte
		for i, l := 0, uint64(len(b)); i < 8; i++ {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}
