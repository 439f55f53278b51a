package pane

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestDbg(t *testing.T) {
	files, _ := filepath.Glob("testdata/claude-2.1.197/*.ansi")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		s := Read(string(b))
		m, ok, why := s.Menu()
		fmt.Printf("== %s box=%v staged=%q prompts=%q last=%s\n   menu=%v %s %+v\n", filepath.Base(f), s.HasBox(), s.Staged(), s.Prompts(), s.LastSpeaker(), ok, why, m)
	}
}
