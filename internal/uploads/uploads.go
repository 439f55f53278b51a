// Package uploads saves the files a person attaches to a message into the
// thread's working directory, in one named folder (Dir), so every agent can
// read them by path whatever its transport. Files are written through an
// os.Root opened on the working directory: a name, a symlinked folder or a
// file swapped in meanwhile cannot lead a write outside it. No shell, no
// process is involved.
package uploads

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
)

// Dir is the folder, inside a thread's working directory, that holds its
// uploads.
const Dir = ".parley-uploads"

// MaxFiles caps the files in one message; their bytes count towards
// limits.max_message_bytes with the text.
const MaxFiles = 10

// maxNameBytes caps a saved file's name (most file systems allow 255).
const maxNameBytes = 120

// File is one attached file as a client sends it.
type File struct {
	Name     string `json:"name"`
	MIMEType string `json:"mime_type,omitempty"`
	Data     []byte `json:"data"` // base64 in JSON
}

// ImageType is the image type f's bytes say it is, when a model API takes
// that type, else "". The declared MIMEType is not trusted: browsers derive it
// from the name, and a JPEG named shot.png sent as image/png is refused by
// the model's API, which then breaks every later turn of that session.
func (f File) ImageType() string { return SniffImage(f.Data) }

// SniffImage is the image type data's bytes say, if a model API takes it.
func SniffImage(data []byte) string {
	if mime := http.DetectContentType(data); IsImageType(mime) {
		return mime
	}
	return ""
}

// IsImageType is true for the image types the model APIs take.
func IsImageType(mime string) bool {
	switch mime {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// Save writes files into cwd's Dir, checking cwd against roots first, and
// returns where each went (paths relative to cwd, with "/"). A name that is
// taken gets a number ("notes (2).txt"): nothing is overwritten. On an error
// the files written so far are removed, so a refused message leaves nothing.
func Save(cwd string, roots []string, files []File) ([]chat.FileRef, error) {
	dir, err := config.Confine(cwd, roots)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("uploads: open the working directory: %w", err)
	}
	defer root.Close()
	if err := root.Mkdir(Dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("uploads: make %s: %w", Dir, err)
	}
	// Keep uploads out of the project's version control.
	if f, err := root.OpenFile(Dir+"/.gitignore", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.WriteString("*\n")
		f.Close()
	}
	var out []chat.FileRef
	fail := func(err error) ([]chat.FileRef, error) {
		for _, r := range out {
			root.Remove(r.Path)
		}
		return nil, err
	}
	for _, f := range files {
		name, err := write(root, Clean(f.Name), f.Data)
		if err != nil {
			return fail(fmt.Errorf("uploads: save %q: %w", f.Name, err))
		}
		out = append(out, chat.FileRef{Name: name, Path: Dir + "/" + name, MIMEType: f.MIMEType, Size: int64(len(f.Data))})
	}
	return out, nil
}

// write creates Dir/name exclusively, numbering the name until one is free.
func write(root *os.Root, name string, data []byte) (string, error) {
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for i := 1; i <= 1000; i++ {
		try := name
		if i > 1 {
			try = stem + " (" + strconv.Itoa(i) + ")" + ext
		}
		f, err := root.OpenFile(Dir+"/"+try, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			root.Remove(Dir + "/" + try)
			return "", err
		}
		return try, nil
	}
	return "", errors.New("1000 files of that name already")
}

// Clean makes a person's file name safe to create in Dir: its last element
// only (no folders, no ".."), no control characters or separators, not
// hidden, at most maxNameBytes, never empty.
func Clean(name string) string {
	name = filepath.Base(strings.ReplaceAll(name, "\\", "/"))
	name = strings.Map(func(r rune) rune {
		switch {
		case r == '/' || r == '\\' || r == 0 || r == utf8.RuneError || unicode.IsControl(r):
			return '_'
		}
		return r
	}, name)
	name = strings.TrimLeft(strings.TrimSpace(name), ".")
	if len(name) > maxNameBytes {
		ext := path.Ext(name)
		if len(ext) > 16 {
			ext = ""
		}
		stem := name[:maxNameBytes-len(ext)]
		for !utf8.ValidString(stem) {
			stem = stem[:len(stem)-1]
		}
		name = stem + ext
	}
	if name == "" {
		name = "file"
	}
	return name
}

// Mention is the line a message's text gets for its saved files, so the
// agent (any agent) and the transcript name them by path.
func Mention(refs []chat.FileRef) string {
	if len(refs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Attached (in the working directory):")
	for _, r := range refs {
		b.WriteString("\n- ")
		b.WriteString(r.Path)
	}
	return b.String()
}

// maxShown caps an uploaded image the dashboard reads back for a thumbnail.
const maxShown = 16 << 20

// OpenImage opens the uploaded image name in cwd's Dir for showing, through
// an os.Root: only a name Save could have made, only an image type the model
// APIs take (sniffed from its bytes, not its name), at most maxShown bytes.
func OpenImage(cwd, name string) ([]byte, string, error) {
	if name == "" || Clean(name) != name {
		return nil, "", fs.ErrNotExist
	}
	root, err := os.OpenRoot(cwd)
	if err != nil {
		return nil, "", err
	}
	defer root.Close()
	f, err := root.Open(Dir + "/" + name)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, "", err
	}
	if !st.Mode().IsRegular() || st.Size() > maxShown {
		return nil, "", fs.ErrNotExist
	}
	data := make([]byte, st.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, "", err
	}
	mime := http.DetectContentType(data)
	if !IsImageType(mime) {
		return nil, "", fs.ErrNotExist
	}
	return data, mime, nil
}
