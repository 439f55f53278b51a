package ui

import (
	"bytes"
	"compress/gzip"
	"io/fs"
	"strings"
	"testing"
)

// budget is the most the dashboard may weigh gzipped (issue 6: under 200 KB).
const budget = 200 << 10

func TestBundleBudget(t *testing.T) {
	t.Parallel()
	total := 0
	err := fs.WalkDir(FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".gz") {
			return err
		}
		b, err := fs.ReadFile(FS(), p)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		w.Write(b)
		w.Close()
		total += buf.Len()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bundle: %d bytes gzipped", total)
	if total > budget {
		t.Errorf("got %d bytes gzipped, want at most %d", total, budget)
	}
}

// The precompressed files must be the files they stand for.
func TestGzipMatches(t *testing.T) {
	t.Parallel()
	gz, _ := fs.Glob(FS(), "assets/*.gz")
	if len(gz) == 0 {
		t.Fatal("got no assets/*.gz, want one per script and stylesheet (npm run build writes them)")
	}
	for _, p := range gz {
		t.Run(p, func(t *testing.T) {
			z, _ := fs.ReadFile(FS(), p)
			orig, err := fs.ReadFile(FS(), strings.TrimSuffix(p, ".gz"))
			if err != nil {
				t.Fatalf("got %v, want the original beside %s", err, p)
			}
			r, err := gzip.NewReader(bytes.NewReader(z))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if _, err := got.ReadFrom(r); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), orig) {
				t.Errorf("got %s unpacking to %d bytes that differ from the %d of the original", p, got.Len(), len(orig))
			}
		})
	}
}
