//go:build e2e

package terminal_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// envSoak turns TestSoakTmux on: the number of faulted messages to send.
const envSoak = "PARLEY_SOAK_TMUX"

// soakFaults are what happens around a send, one picked at random per message.
var soakFaults = []string{
	"clean",       // nothing
	"junk-before", // a person's typing left in the box
	"junk-during", // a person typing while parley sends
	"repeat",      // the previous message's text again
	"prefix",      // the first words of a message in the scrollback
	"copy-mode",   // the pane in copy-mode
	"menu",        // a permission menu open (from a prompt typed by hand)
	"busy",        // a turn running (typed by hand, slow answer)
	"frozen",      // the agent stopped (SIGSTOP) during the send
	"stop-cont",   // SIGSTOP + SIGCONT just before the send: a full redraw
	"exited",      // the agent killed just before the send
	"long",        // a 5,000-character paste
	"resize",      // the window resized just before the send: a full redraw
}

// TestSoakTmux sends faulted messages into the real Claude Code TUI through
// the daemon's socket, as a person would, and counts against the stand-in's
// request log: false `submitted` (never reached the model), `failed` that did
// reach it, doubled or glued texts, and hangs (no final receipt within
// soakBound). Not run by default: make soak-tmux (PARLEY_SOAK_TMUX=<n>;
// PARLEY_SOAK_SEED, PARLEY_SOAK_FAULTS=a,b to pick faults, PARLEY_SOAK_FOR=1h
// to stop sending after a while, PARLEY_SOAK_OUT=file for the report).
func TestSoakTmux(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(envSoak))
	if n <= 0 {
		t.Skip("a soak: set " + envSoak + "=<messages> (make soak-tmux)")
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("PARLEY_SOAK_SEED"), 10, 64); err == nil {
		seed = v
	}
	faults := soakFaults
	if v := os.Getenv("PARLEY_SOAK_FAULTS"); v != "" {
		faults = strings.Split(v, ",")
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	load0 := loadavg()
	td := startTmuxDaemonWith(t, []claudeapi.Rule{
		// Contains: typing a junk-during fault left in the box after the
		// send's Enter goes out with the prompt typed by hand.
		{Match: claudeapi.Match{Contains: "hand busy"}, Reply: claudeapi.Text("a slow answer to a prompt typed by hand", 8, 400*time.Millisecond)},
		{Match: claudeapi.Match{Contains: "hand menu"}, Reply: claudeapi.Bash("touch soak-menu", "soak menu")},
		{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text("ran", 1, 0)},
	}, rigOpts{wrapped: true})
	s := chatsock.Dial(t, "http://"+td.d.Addr(), td.d.Token(), client.Options{Chat: "soak", Since: -1})
	s.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "ready")
	s.Send(chatsock.Msg("warm", "warm up"))
	from := s.WaitFor(0, wait, chatsock.PromptDone("warm", chat.StopEndTurn), "the warm-up turn")

	sk := &soak{t: t, td: td, s: s, rng: rng, sent: map[string]*sentText{}, shown: map[string]bool{}, byFault: map[string]*soakCount{}}
	t.Logf("soak: %d messages, seed %d, faults %v, load %s", n, seed, faults, load0)
	start := time.Now()
	var until time.Time
	if d, err := time.ParseDuration(os.Getenv("PARLEY_SOAK_FOR")); err == nil {
		until = start.Add(d)
	}
	for i := 0; i < n; i++ {
		if !until.IsZero() && time.Now().After(until) {
			t.Logf("soak: PARLEY_SOAK_FOR is up after %d messages", i)
			break
		}
		fault := faults[rng.IntN(len(faults))]
		from = sk.one(i, fault, from)
		if (i+1)%25 == 0 {
			t.Logf("soak: %d/%d sent in %v, load %s", i+1, n, time.Since(start).Round(time.Second), loadavg())
		}
	}
	// Let the agent finish: a queued copy may still be on its way.
	sk.waitIdle(60 * time.Second)
	time.Sleep(3 * time.Second)
	sk.report(time.Since(start), load0)
}

// soakBound: a send without a final receipt within it is a hang.
const soakBound = 120 * time.Second

type soak struct {
	t    *testing.T
	td   *tmuxDaemon
	s    *chatsock.Conn
	rng  *rand.Rand
	last string   // the previous message's text
	past []string // every text sent
	// sent: per text, the receipts it got.
	sent    map[string]*sentText
	byFault map[string]*soakCount
	hangs   []string
	shown   map[string]bool // failure details whose pane is in the log
	outcome []string        // one line per message, for the log
}

type sentText struct {
	submitted, failed, uncertain int
	faults                       []string
}

type soakCount struct{ sent, submitted, failed, uncertain, hangs int }

func (sk *soak) count(fault string) *soakCount {
	c := sk.byFault[fault]
	if c == nil {
		c = &soakCount{}
		sk.byFault[fault] = c
	}
	return c
}

var junkLetters = []rune("zqxjkvwy ")

func (sk *soak) junk() string {
	r := make([]rune, 3+sk.rng.IntN(10))
	for i := range r {
		r[i] = junkLetters[sk.rng.IntN(len(junkLetters))]
	}
	return "zz" + strings.TrimSpace(string(r))
}

func (sk *soak) text(i int, fault string) string {
	switch fault {
	case "repeat":
		if sk.last != "" {
			return sk.last
		}
	case "prefix":
		if len(sk.past) > 0 {
			w := strings.Fields(sk.past[sk.rng.IntN(len(sk.past))])
			if len(w) > 1 {
				return strings.Join(w[:1+sk.rng.IntN(len(w)-1)], " ")
			}
		}
	case "long":
		var b strings.Builder
		fmt.Fprintf(&b, "m%d long paste\n", i)
		for line := 0; b.Len() < 4990; line++ {
			fmt.Fprintf(&b, "line %d of message m%d, words to fill a terminal paste of five thousand\n", line, i)
		}
		b.WriteString(fmt.Sprintf("end of m%d", i))
		return b.String()
	}
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot"}
	return fmt.Sprintf("m%d %s %s %s", i, words[sk.rng.IntN(6)], words[sk.rng.IntN(6)], fault)
}

// one sends message i with a fault and waits for its final receipt and the
// end of its turn; it returns the socket index to read on from.
func (sk *soak) one(i int, fault string, from int) int {
	t, td, s := sk.t, sk.td, sk.s
	id := fmt.Sprintf("s%d", i)
	text := sk.text(i, fault)
	c := sk.count(fault)
	c.sent++
	var after func()
	var during func()
	if fault != "exited" && fault != "clean" && fault != "repeat" && fault != "prefix" && fault != "long" {
		// The fault needs a running agent: one killed by the previous
		// message's fault is started again first (by a message the count
		// does not read), or the fault would act on no pane at all.
		from = sk.revive(i, from)
	}
	switch fault {
	case "junk-before":
		td.keys(t, "-l", sk.junk())
	case "junk-during":
		// Bursts of typing at random moments of the send.
		var js []string
		var ds []time.Duration
		for k := 0; k < 1+sk.rng.IntN(4); k++ {
			js, ds = append(js, sk.junk()), append(ds, time.Duration(sk.rng.IntN(1500))*time.Millisecond)
		}
		during = func() {
			start := time.Now()
			for k := range js {
				time.Sleep(time.Until(start.Add(ds[k])))
				td.keys(t, "-l", js[k])
			}
		}
	case "copy-mode":
		td.tmux(t, "copy-mode", "-t", td.pane(t))
		td.tmux(t, "send-keys", "-t", td.pane(t), "-X", "cursor-up")
	case "menu":
		at := s.Len()
		td.keys(t, "-l", fmt.Sprintf("hand menu %d", i))
		td.keys(t, "Enter")
		if card, ok := sk.waitEvent(at, 30*time.Second, chatsock.Type(chat.TypePermissionRequest)); ok {
			var pr chat.PermissionRequest
			s.Get(card).Decode(&pr)
			d := time.Duration(500+sk.rng.IntN(1500)) * time.Millisecond
			during = func() {
				time.Sleep(d)
				s.Send(map[string]any{"type": "permission_response", "request_id": pr.RequestID, "option_id": "1"})
			}
		} else {
			t.Logf("soak %d: the hand-typed menu prompt made no card", i)
		}
	case "busy":
		td.keys(t, "-l", fmt.Sprintf("hand busy %d", i))
		td.keys(t, "Enter")
		td.waitPane(t, 10*time.Second, "esc to interrupt")
	case "frozen":
		// Stopped before the send, for long enough to fail it or not.
		pid := td.agentPID(t)
		signal(pid, syscall.SIGSTOP)
		d := time.Duration(1000+sk.rng.IntN(8000)) * time.Millisecond
		during = func() { time.Sleep(d); signal(pid, syscall.SIGCONT) }
		after = func() { signal(pid, syscall.SIGCONT) }
	case "stop-cont":
		// Stopped and resumed just before the send (a full redraw), and
		// again at a random moment of it.
		pid := td.agentPID(t)
		signal(pid, syscall.SIGSTOP)
		time.Sleep(time.Duration(50+sk.rng.IntN(300)) * time.Millisecond)
		signal(pid, syscall.SIGCONT)
		d1, d2 := time.Duration(sk.rng.IntN(1500))*time.Millisecond, time.Duration(100+sk.rng.IntN(2000))*time.Millisecond
		during = func() {
			time.Sleep(d1)
			signal(pid, syscall.SIGSTOP)
			time.Sleep(d2)
			signal(pid, syscall.SIGCONT)
		}
		after = func() { signal(pid, syscall.SIGCONT) }
	case "exited":
		signal(td.agentPID(t), syscall.SIGKILL)
	case "resize":
		// Resized just before the send, and again during it.
		resize := func(w, h int) {
			td.tmux(t, "resize-window", "-t", td.pane(t), "-x", strconv.Itoa(w), "-y", strconv.Itoa(h))
		}
		resize(90+sk.rng.IntN(80), 24+sk.rng.IntN(30))
		w, h, d := 90+sk.rng.IntN(80), 24+sk.rng.IntN(30), time.Duration(sk.rng.IntN(1500))*time.Millisecond
		during = func() { time.Sleep(d); resize(w, h) }
	}
	sk.last = text
	sk.past = append(sk.past, text)
	st := sk.sent[text]
	if st == nil {
		st = &sentText{}
		sk.sent[text] = st
	}
	st.faults = append(st.faults, fault)
	at0 := s.Len()
	sentAt := time.Now().UTC().Format("15:04:05.000")
	s.Send(chatsock.Msg(id, text))
	var wg sync.WaitGroup
	if during != nil {
		wg.Add(1)
		go func() { defer wg.Done(); during() }()
	}
	final := func(ev client.Event) bool {
		return chatsock.Delivery(id, chat.DeliverySubmitted)(ev) || chatsock.Delivery(id, chat.DeliveryFailed)(ev) ||
			chatsock.Delivery(id, "uncertain")(ev)
	}
	at, ok := sk.waitEvent(max(from, at0), soakBound, final)
	outcome := ""
	if !ok {
		c.hangs++
		sk.hangs = append(sk.hangs, fmt.Sprintf("%s %q (%s)", id, short(text), fault))
		outcome = "hang"
		s.Send(map[string]any{"type": "stop"})
		at, ok = sk.waitEvent(max(from, at0), soakBound, final)
	}
	if ok {
		ev := s.Get(at)
		state := fmt.Sprint(chatsock.FieldOf(ev, "state"))
		switch state {
		case chat.DeliverySubmitted:
			c.submitted++
			st.submitted++
		case chat.DeliveryFailed:
			c.failed++
			st.failed++
		default:
			c.uncertain++
			st.uncertain++
		}
		detail := fmt.Sprint(chatsock.FieldOf(ev, "detail"))
		outcome = strings.TrimSpace(outcome + " " + state + " " + detail)
		if state != chat.DeliverySubmitted && !sk.shown[detail] {
			// The first time a reason is given, what the pane showed.
			sk.shown[detail] = true
			outcome += "\n" + td.tmux(t, "capture-pane", "-p", "-t", td.pane(t))
		}
		// The lane's turn ends (prompt_done, or at once for a failed one).
		if end, ok := sk.waitEvent(at, soakBound, func(ev client.Event) bool {
			return ev.Type == chat.TypeTurnStatus && chatsock.FieldOf(ev, "active") != true
		}); ok {
			at = end
		} else {
			c.hangs++
			sk.hangs = append(sk.hangs, fmt.Sprintf("%s %q (%s): its turn never ended", id, short(text), fault))
			s.Send(map[string]any{"type": "stop"})
		}
	} else {
		at = s.Len()
	}
	wg.Wait()
	if after != nil {
		after()
	}
	sk.outcome = append(sk.outcome, fmt.Sprintf("%s %s %-11s %q: %s", sentAt, id, fault, short(text), outcome))
	return at
}

// revive starts the agent again, if it is not running, with a message the
// count does not read (no m<N> token); it returns the socket index to read on from.
func (sk *soak) revive(i int, from int) int {
	if sk.td.agentPID(sk.t) > 0 {
		return from
	}
	id := fmt.Sprintf("r%d", i)
	sk.s.Send(chatsock.Msg(id, fmt.Sprintf("revive %d", i)))
	if at, ok := sk.waitEvent(from, soakBound, chatsock.PromptDone(id, chat.StopEndTurn)); ok {
		return at
	}
	sk.t.Logf("soak %d: the agent could not be started again", i)
	return from
}

// waitEvent is chatsock's WaitFor without failing the test: a soak counts.
func (sk *soak) waitEvent(from int, within time.Duration, match func(client.Event) bool) (int, bool) {
	at := 0
	ok := testkit.Within(within, func() bool {
		evs := sk.s.Snapshot()
		for i := from; i < len(evs); i++ {
			if match(evs[i]) {
				at = i
				return true
			}
		}
		return false
	})
	return at, ok
}

// waitIdle waits until the pane no longer says Claude Code is working.
func (sk *soak) waitIdle(within time.Duration) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		out, err := exec.Command("tmux", "-L", sk.td.socket, "capture-pane", "-p", "-t", sk.td.pane(sk.t)).Output()
		if err != nil || !strings.Contains(string(out), "esc to interrupt") {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

var tokenRE = regexp.MustCompile(`\bm\d+\b`)

var workingRE = regexp.MustCompile(`(?s)The user sent a new message while you were working:\n(.*?)(?:\n\nIMPORTANT|\n*$)`)

// received are the person texts the model got, each once: the new part of
// every request (what follows its last assistant message) holds what the
// agent sent since its previous request.
func (sk *soak) received() []string {
	var out []string
	for _, r := range sk.td.api.ScenarioRequests() {
		lastA := -1
		for i, m := range r.Messages {
			if m.Role == "assistant" {
				lastA = i
			}
		}
		for _, m := range r.Messages[lastA+1:] {
			for _, c := range m.Content {
				var txt string
				switch c.Type {
				case "text":
					txt = c.Text
				case "tool_result":
					txt = c.ResultText()
				default:
					continue
				}
				if strings.HasPrefix(strings.TrimSpace(txt), "<system-reminder>") && !strings.Contains(txt, "while you were working") {
					continue
				}
				if mm := workingRE.FindAllStringSubmatch(txt, -1); mm != nil {
					for _, x := range mm {
						out = append(out, strings.TrimSpace(x[1]))
					}
					continue
				}
				if c.Type == "text" {
					out = append(out, strings.TrimSpace(txt))
				}
			}
		}
	}
	return out
}

func (sk *soak) report(took time.Duration, load0 string) {
	t := sk.t
	got := map[string]int{}
	var glued, withJunk []string
	for _, txt := range sk.received() {
		if !tokenRE.MatchString(txt) {
			continue // warm-up, prompts typed by hand, junk
		}
		if _, ok := sk.sent[txt]; ok {
			got[txt]++
			continue
		}
		// A message with a person's typing (junk, "zz…") right before or
		// after it: typed in the instant between parley's last look at the
		// box and its Enter, it went out with the message (ecbeb28: the
		// message reached the agent once, as submitted says). Counted apart.
		if sent, ok := sk.withJunk(txt); ok {
			withJunk = append(withJunk, short(txt))
			got[sent]++
			continue
		}
		glued = append(glued, short(txt))
		// The messages it holds were received once each: the longest texts
		// sent that it holds (not "m1" inside "m1 alpha" too).
		var in []string
		for sent := range sk.sent {
			if containsWords(txt, sent) {
				in = append(in, sent)
			}
		}
		for _, a := range in {
			inner := false
			for _, b := range in {
				inner = inner || a != b && containsWords(b, a)
			}
			if !inner {
				got[a]++
			}
		}
	}
	falseSub, failedReached, doubled, uncertainReached, uncertainLost := 0, 0, 0, 0, 0
	var detail []string
	for txt, st := range sk.sent {
		r := got[txt]
		if st.submitted > r {
			falseSub += st.submitted - r
			detail = append(detail, fmt.Sprintf("false submitted ×%d %q %v%s", st.submitted-r, short(txt), st.faults, sk.whereIs(txt)))
		}
		extra := max(0, r-st.submitted)
		if extra > 0 && st.uncertain > 0 {
			k := min(extra, st.uncertain)
			uncertainReached += k
			extra -= k
		}
		uncertainLost += max(0, st.uncertain-max(0, r-st.submitted))
		if extra > 0 && st.failed > 0 {
			k := min(extra, st.failed)
			failedReached += k
			extra -= k
			detail = append(detail, fmt.Sprintf("failed but reached ×%d %q %v", k, short(txt), st.faults))
		}
		if extra > 0 {
			doubled += extra
			detail = append(detail, fmt.Sprintf("doubled ×%d %q %v", extra, short(txt), st.faults))
		}
	}
	slices.Sort(detail)
	total, sub, fail, unc := 0, 0, 0, 0
	var rows []string
	for _, f := range soakFaults {
		c := sk.byFault[f]
		if c == nil {
			continue
		}
		total += c.sent
		sub += c.submitted
		fail += c.failed
		unc += c.uncertain
		rows = append(rows, fmt.Sprintf("| %s | %d | %d | %d | %d | %d |", f, c.sent, c.submitted, c.failed, c.uncertain, c.hangs))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "soak: %d messages in %v; load average %s at start, %s at end\n", total, took.Round(time.Second), load0, loadavg())
	fmt.Fprintf(&b, "| fault | sent | submitted | failed | uncertain | hangs |\n|---|---|---|---|---|---|\n%s\n", strings.Join(rows, "\n"))
	fmt.Fprintf(&b, "receipts: %d submitted, %d failed, %d uncertain (%d reached the model, %d did not)\n", sub, fail, unc, uncertainReached, uncertainLost)
	fmt.Fprintf(&b, "false submitted: %d\nfailed that reached the model: %d\ndoubled: %d\nglued: %d\nhangs: %d\n",
		falseSub, failedReached, doubled, len(glued), len(sk.hangs))
	fmt.Fprintf(&b, "with typing from the instant of Enter (accepted, counted apart): %d\n", len(withJunk))
	for _, d := range detail {
		fmt.Fprintf(&b, "  %s\n", d)
	}
	for _, g := range glued {
		fmt.Fprintf(&b, "  glued: %q\n", g)
	}
	for _, h := range sk.hangs {
		fmt.Fprintf(&b, "  hang: %s\n", h)
	}
	for _, g := range withJunk {
		fmt.Fprintf(&b, "  with typing: %q\n", g)
	}
	t.Log(b.String())
	if path := os.Getenv("PARLEY_SOAK_OUT"); path != "" {
		_ = os.WriteFile(path, []byte(b.String()+"\n"+strings.Join(sk.outcome, "\n")+"\n"), 0o644)
	}
	if os.Getenv("PARLEY_SOAK_LOG") != "" {
		t.Log("every message:\n" + strings.Join(sk.outcome, "\n"))
	}
	if falseSub+failedReached+doubled+len(glued)+len(sk.hangs) > 0 {
		t.Errorf("the soak found untrue receipts (see above)")
	}
}

// junkRE is a person's typing as the soak types it (soak.junk).
var junkRE = regexp.MustCompile(`^zz[zqxjkvwy ]*$`)

// withJunk reports whether txt is one message sent and submitted, with only
// the soak's typing before or after it, and which.
func (sk *soak) withJunk(txt string) (string, bool) {
	best := ""
	for sent, st := range sk.sent {
		if st.submitted == 0 || len(sent) <= len(best) {
			continue
		}
		i := strings.Index(txt, sent)
		if i < 0 {
			continue
		}
		before, after := strings.TrimSpace(txt[:i]), strings.TrimSpace(txt[i+len(sent):])
		okJunk := func(j string) bool { return j == "" || junkRE.MatchString(j) }
		if (before != "" || after != "") && okJunk(before) && okJunk(after) {
			best = sent
		}
	}
	return best, best != ""
}

// whereIs shows where a text is in the model's requests at all (for a
// false submitted: did it arrive in a form the count does not read?).
func (sk *soak) whereIs(text string) string {
	q, _ := json.Marshal(text)
	needle := string(q[1 : len(q)-1])
	for _, r := range sk.td.api.Requests() {
		if i := strings.Index(string(r.Body), needle); i >= 0 && containsWords(string(r.Body), needle) {
			from, to := max(0, i-200), min(len(r.Body), i+len(needle)+100)
			return fmt.Sprintf("\n    in a %s request: …%s…", r.Kind, r.Body[from:to])
		}
	}
	return " (in no request)"
}

// containsWords reports whether sub is in s, not as the start of a longer
// number: "m16" is not in "m160 alpha" (a prefix fault's text is not in
// every later message whose number starts the same). Glued to other typing
// on either side ("zzqm16 alphahand menu") it is.
func containsWords(s, sub string) bool {
	digit := func(b byte) bool { return '0' <= b && b <= '9' }
	for i := 0; ; {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			return false
		}
		end := i + j + len(sub)
		if end == len(s) || !digit(sub[len(sub)-1]) || !digit(s[end]) {
			return true
		}
		i += j + 1
	}
}

func short(s string) string {
	s = strings.ReplaceAll(s, "\n", "⏎")
	if r := []rune(s); len(r) > 60 {
		return string(r[:30]) + "…" + string(r[len(r)-25:])
	}
	return s
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// tmux runs a tmux command on the daemon's server.
func (td *tmuxDaemon) tmux(t testing.TB, args ...string) string {
	out, err := exec.Command("tmux", append([]string{"-L", td.socket}, args...)...).CombinedOutput()
	if err != nil {
		t.Logf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

// keys types into the agent's pane as a person at the terminal would.
func (td *tmuxDaemon) keys(t testing.TB, args ...string) {
	td.tmux(t, append([]string{"send-keys", "-t", td.pane(t)}, args...)...)
}

// pane is the agent's pane ("" when there is none: the agent exited and no
// message has started it again).
func (td *tmuxDaemon) pane(t testing.TB) string {
	out, _ := exec.Command("tmux", "-L", td.socket, "list-panes", "-a", "-F", "#{pane_id}").Output()
	f := strings.Fields(string(out))
	if len(f) == 0 {
		return "%nothing"
	}
	return f[0]
}

func (td *tmuxDaemon) waitPane(t testing.TB, within time.Duration, s string) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		out, _ := exec.Command("tmux", "-L", td.socket, "capture-pane", "-p", "-t", td.pane(t)).Output()
		if strings.Contains(string(out), s) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// signal signals the agent, if there is one (pid 0 would be this process group).
func signal(pid int, sig syscall.Signal) {
	if pid > 0 {
		_ = syscall.Kill(pid, sig)
	}
}

// agentPID is the Claude Code process under the pane's wrapper (0: none).
func (td *tmuxDaemon) agentPID(t testing.TB) int {
	out, _ := exec.Command("tmux", "-L", td.socket, "list-panes", "-a", "-F", "#{pane_pid}").Output()
	f := strings.Fields(string(out))
	if len(f) == 0 {
		return 0
	}
	tasks, _ := filepath.Glob("/proc/" + f[0] + "/task/*/children")
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		if k := strings.Fields(string(b)); len(k) > 0 {
			pid, _ := strconv.Atoi(k[0])
			return pid
		}
	}
	return 0
}
