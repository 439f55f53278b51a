package gitwork

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A 5,000-file repository whose working tree differs from its base by about
// 2 MB of patch (200 files changed, 20 new ones): the whole change, first
// page, as GET /api/threads/{id}/changes answers it. The bar is 300 ms.
func BenchmarkDiff5000Files2MB(b *testing.B) {
	home := b.TempDir()
	b.Setenv("HOME", home)
	b.Setenv("XDG_CONFIG_HOME", home)
	b.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	b.Setenv("GIT_AUTHOR_NAME", "B")
	b.Setenv("GIT_AUTHOR_EMAIL", "b@example.com")
	b.Setenv("GIT_COMMITTER_NAME", "B")
	b.Setenv("GIT_COMMITTER_EMAIL", "b@example.com")
	dir := b.TempDir()
	ctx := context.Background()
	line := strings.Repeat("x", 70) + "\n"
	for i := range 5000 {
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%50), fmt.Sprintf("f%04d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat(line, 20)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "base"}} {
		if _, err := git(ctx, dir, args...); err != nil {
			b.Fatal(err)
		}
	}
	base := Head(ctx, dir)
	// 200 files rewritten with 100 new lines of ~100 bytes each: ~2 MB of
	// patch with the removed lines; 20 new files.
	changed := strings.Repeat(strings.Repeat("y", 99)+"\n", 100)
	for i := range 200 {
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%50), fmt.Sprintf("f%04d.txt", i))
		if err := os.WriteFile(p, []byte(changed), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("new%02d.txt", i)), []byte(changed), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	c, err := Diff(ctx, dir, Query{Base: base, PageBytes: 4 << 20})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Diff(ctx, dir, Query{Base: base}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(c.Patch))/(1<<20), "MiB-patch")
	b.ReportMetric(float64(len(c.Files)), "files")
}
