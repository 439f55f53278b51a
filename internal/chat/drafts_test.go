package chat

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// The dashboard's fold ends a draft on the same events as the lane and parley
// chat: were its list to drift, appends would go onto a draft it dropped (or
// it would keep one the lane has ended), and a terminal agent's answer would
// show no provisional text or a wrong one.
func TestTheDashboardEndsADraftOnTheSameEvents(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("..", "..", "ui", "src", "fold.ts"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`const draftEnds = new Set\(\[([^\]]*)\]\)`).FindSubmatch(src)
	if m == nil {
		t.Fatal("ui/src/fold.ts has no `const draftEnds = new Set([...])`: say here where its list went")
	}
	var ts []string
	for _, q := range regexp.MustCompile(`"([a-z_]+)"`).FindAllSubmatch(m[1], -1) {
		ts = append(ts, string(q[1]))
	}
	slices.Sort(ts)
	want := slices.Clone(draftEnders)
	slices.Sort(want)
	if !slices.Equal(ts, want) {
		t.Fatalf("ui/src/fold.ts ends a draft on %v; chat.EndsDraft on %v", ts, want)
	}
	for _, typ := range ts {
		if !EndsDraft(typ) {
			t.Errorf("EndsDraft(%q) = false", typ)
		}
	}
	if EndsDraft(TypeAgentDraft) || EndsDraft(TypeUserMessage) || EndsDraft(TypeDelivery) {
		t.Error("a draft, a person's message or a receipt ends a draft")
	}
}
