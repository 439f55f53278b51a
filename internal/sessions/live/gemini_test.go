package live

import (
	"strings"
	"testing"
)

// Gemini CLI is told by its script, however Node runs it; its --resume
// session id is read; Gemini over ACP and other programs are not it.
func TestGeminiArgs(t *testing.T) {
	id := "8ce45fcf-5bea-4bd6-b332-0d448bc6cdcf"
	for _, c := range []struct {
		argv   string
		resume string
		ok     bool
	}{
		{"node /home/p/.npm/bin/gemini", "", true},
		{"/usr/bin/node --max-old-space-size=12052 /work/.cache/npm/gemini/node_modules/.bin/gemini", "", true},
		{"node /usr/lib/node_modules/@google/gemini-cli/bundle/gemini.js --resume " + id, id, true},
		{"node /x/gemini -r " + id + " -i hi", id, true},
		{"node /x/gemini --resume=" + id, id, true},
		{"node /x/gemini --resume latest", "", true},
		{"node /x/gemini --acp", "", false},
		{"node /x/gemini --experimental-acp", "", false},
		{"node /x/qwen", "", false},
		{"node", "", false},
		{"/bin/bash -c gemini", "", false},
		{"vim gemini", "", false},
	} {
		resume, ok := geminiArgs(strings.Fields(c.argv))
		if resume != c.resume || ok != c.ok {
			t.Errorf("%q: %q %v, want %q %v", c.argv, resume, ok, c.resume, c.ok)
		}
	}
}
