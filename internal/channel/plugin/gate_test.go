package plugin

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/channel/acpagent"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/router"
)

func TestAllowed(t *testing.T) {
	t.Parallel()
	allowed := []string{"alice!*@trusted.example", "bob!~bob@10.0.0.?", "account:carol", "12345", "dave@example.org"}
	tests := []struct {
		user, account string
		want          bool
	}{
		{"alice!~alice@trusted.example", "", true},
		{"ALICE!~Alice@Trusted.Example", "", true}, // IRC nicks and hosts ignore case
		{"alice!~mallory@evil.example", "", false}, // the nick alone is not enough
		{"alice", "", false},
		{"alice!~alice@trusted.example.evil.example", "", false},
		{"bob!~bob@10.0.0.7", "", true},
		{"bob!~bob@10.0.0.77", "", false}, // ? is one character
		{"carol!~c@anywhere", "carol", true},
		{"carol!~c@anywhere", "", false},   // no account: not carol's entry
		{"account:carol", "", false},       // a user id is never matched against account entries
		{"mallory!~m@x", "carolyn", false}, // the account must match whole
		{"12345", "", true},                // Telegram ids
		{"123456", "", false},              // exact, not a prefix
		{"dave@example.org", "", true},     // XMPP bare JIDs
		{"", "carol", false},               // no user: never
		{"eve!~eve@trusted.example", "", false},
	}
	for _, tt := range tests {
		if got := Allowed(allowed, tt.user, tt.account); got != tt.want {
			t.Errorf("Allowed(%q, %q): got %v, want %v", tt.user, tt.account, got, tt.want)
		}
	}
	if Allowed(nil, "alice!~a@h", "") {
		t.Errorf("an empty allowed_users let someone in")
	}
	if Allowed([]string{"account:"}, "x!y@z", "") || Allowed([]string{""}, "x", "") {
		t.Errorf("an empty entry let someone in")
	}
	if !Allowed([]string{"*"}, "anyone!a@b", "") {
		t.Errorf(`"*" is everyone`)
	}
}

func TestAllowedWarningsForIRC(t *testing.T) {
	t.Parallel()
	irc := config.Plugin{ID: "irc", Args: []string{"plugin", "irc"},
		AllowedUsers: []string{"alice", "bob!*@*", "carol!~c@home.example", "account:dave"}}
	w := strings.Join(allowedWarnings(irc), "\n")
	if !strings.Contains(w, `"alice" is not a nick!user@host mask: it matches no one`) {
		t.Errorf("no warning for a bare nick:\n%s", w)
	}
	if !strings.Contains(w, `"bob!*@*" trusts the nick alone`) {
		t.Errorf("no warning for a nick-only mask:\n%s", w)
	}
	if strings.Contains(w, "carol") || strings.Contains(w, "dave") {
		t.Errorf("warned about good entries:\n%s", w)
	}
	// Other plugins' ids are not masks.
	tg := config.Plugin{ID: "tg", Args: []string{"plugin", "telegram"}, AllowedUsers: []string{"12345"}}
	if w := allowedWarnings(tg); len(w) != 0 {
		t.Errorf("telegram: got warnings %q", w)
	}
}

// fakeRouter answers what the gate asks; any other call panics (nil interface).
type fakeRouter struct {
	Router
	mu       sync.Mutex
	threads  map[chat.RouteKey]chat.ThreadID
	controls []router.Control
	calls    int
}

func (f *fakeRouter) ThreadOf(_ context.Context, r chat.RouteKey) (chat.ThreadID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.threads[r], nil
}

func (f *fakeRouter) Control(_ context.Context, c router.Control) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.controls = append(f.controls, c)
	return nil
}

type fakeStore struct {
	Store
	cards map[chat.ThreadID][]chat.Card
}

func (f *fakeStore) Cards(_ context.Context, id chat.ThreadID, state string) ([]chat.Card, error) {
	if state != chat.CardOpen {
		return nil, nil
	}
	return f.cards[id], nil
}

func TestGate(t *testing.T) {
	t.Parallel()
	route := chat.RouteKey{Channel: "irc", Chat: "#agents"}
	bare := chat.RouteKey{Channel: "irc", Chat: "#new"}
	perm, _ := json.Marshal(chat.PermissionRequest{RequestID: "r1", Tool: chat.PermissionTool{Name: "Bash"},
		Options: []chat.PermissionOption{{ID: "allow", Label: "Allow"}, {ID: "deny", Label: "Deny"}}})
	fr := &fakeRouter{threads: map[chat.RouteKey]chat.ThreadID{route: "t1"}}
	fs := &fakeStore{cards: map[chat.ThreadID][]chat.Card{}}
	h := New(fr, fs, nil, Options{})
	p := config.Plugin{ID: "irc", AllowedUsers: []string{"alice!*@trusted.example"}}
	gate := h.gate(p, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	alice := "alice!~a@trusted.example"

	for _, user := range []string{"", "mallory!~m@evil.example", "alice!~m@evil.example"} {
		rep := gate(ctx, acpagent.GateRequest{Route: route, User: user, Text: "1"})
		if !rep.Handled || rep.Reply != Refusal {
			t.Errorf("user %q: got %+v, want the refusal", user, rep)
		}
	}
	if fr.calls != 0 {
		t.Errorf("a refused user's prompt reached the router (%d calls)", fr.calls)
	}

	// A number with no open card is an ordinary message for the agent.
	if rep := gate(ctx, acpagent.GateRequest{Route: route, User: alice, Text: "1"}); rep.Handled {
		t.Errorf("a number with no open card: got %+v, want it passed to the agent", rep)
	}
	if rep := gate(ctx, acpagent.GateRequest{Route: bare, User: alice, Text: "2"}); rep.Handled {
		t.Errorf("a number on a chat with no thread: got %+v, want it passed to the agent", rep)
	}
	if rep := gate(ctx, acpagent.GateRequest{Route: route, User: alice, Text: "hello"}); rep.Handled {
		t.Errorf("a message: got %+v, want it passed to the agent", rep)
	}

	// With an open card a number answers it, and one out of range is told so.
	fs.cards["t1"] = []chat.Card{{ThreadID: "t1", RequestID: "r1", Kind: chat.CardPermission, State: chat.CardOpen, Request: perm}}
	if rep := gate(ctx, acpagent.GateRequest{Route: route, User: alice, Text: "3"}); !rep.Handled || rep.Reply != "Reply with a number from 1 to 2." {
		t.Errorf("an out-of-range number: got %+v", rep)
	}
	rep := gate(ctx, acpagent.GateRequest{Route: route, User: alice, Text: "2"})
	if !rep.Handled || rep.Reply != "Answered: Deny" {
		t.Errorf("a number with an open card: got %+v, want it answered", rep)
	}
	if len(fr.controls) != 1 || fr.controls[0].Permission == nil || fr.controls[0].Permission.OptionID != "deny" || fr.controls[0].From != route {
		t.Errorf("controls: got %+v, want one permission_response choosing deny from %v", fr.controls, route)
	}

	// A chat command is parley's to answer.
	if rep := gate(ctx, acpagent.GateRequest{Route: route, User: alice, Text: "/frobnicate"}); !rep.Handled || !strings.Contains(rep.Reply, "unknown command") {
		t.Errorf("an unknown command: got %+v", rep)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	const lo, hi = 500 * time.Millisecond, 30 * time.Second
	within := func(d, want time.Duration) bool {
		return d >= time.Duration(float64(want)*0.8) && d <= time.Duration(float64(want)*1.2)
	}
	for fails, want := range []time.Duration{lo, 2 * lo, 4 * lo, 8 * lo, 16 * lo, 32 * lo, hi, hi, hi} {
		for range 200 {
			if d := restarts(lo, hi).Delay(fails); !within(d, want) {
				t.Fatalf("backoff(%d): got %v, want %v ±20%%", fails, d, want)
			}
		}
	}
	if d := restarts(lo, hi).Delay(1000); !within(d, hi) {
		t.Errorf("backoff(1000): got %v, want the cap %v ±20%%", d, hi)
	}
	// The jitter spreads: 200 draws are not all the same.
	seen := map[time.Duration]bool{}
	for range 200 {
		seen[restarts(lo, hi).Delay(3)] = true
	}
	if len(seen) < 10 {
		t.Errorf("backoff(3) drew only %d distinct delays in 200: no jitter", len(seen))
	}
}

func TestNextFailsResetsAfterAStableMinute(t *testing.T) {
	t.Parallel()
	if got := nextFails(4, 10*time.Second); got != 5 {
		t.Errorf("a quick failure after 4: got %d, want 5", got)
	}
	if got := nextFails(4, time.Minute+time.Second); got != 1 {
		t.Errorf("a failure after a minute of running: got %d, want 1 (the delay starts over)", got)
	}
	if got := nextFails(0, 0); got != 1 {
		t.Errorf("the first failure: got %d, want 1", got)
	}
}
