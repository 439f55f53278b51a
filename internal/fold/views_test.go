package fold

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
)

// The table both folds are held to: ui/testdata/views.json, which
// ui/src/fold.test.ts replays through the dashboard's fold too. Each case is
// frames (recorded from a real Claude Code session, or written out) and the
// view they fold to, in a neutral shape both sides write the same way.
func TestSharedViews(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "ui", "testdata", "views.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Cases []struct {
			Name   string            `json:"name"`
			Frames string            `json:"frames"`
			Upto   int               `json:"upto"`
			Events []json.RawMessage `json:"events"`
			View   neutralView       `json:"view"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &table); err != nil {
		t.Fatal(err)
	}
	if len(table.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range table.Cases {
		t.Run(c.Name, func(t *testing.T) {
			frames := c.Events
			if c.Frames != "" {
				frames = recorded(t, c.Frames)
				if c.Upto > 0 {
					frames = frames[:c.Upto]
				}
			}
			f := New()
			for _, fr := range frames {
				ev, err := client.Parse(fr)
				if err != nil {
					t.Fatalf("frame %s: %v", fr, err)
				}
				f.Apply(ev)
			}
			got := neutral(f.View())
			if !reflect.DeepEqual(got, c.View) {
				gb, _ := json.MarshalIndent(got, "", " ")
				wb, _ := json.MarshalIndent(c.View, "", " ")
				t.Errorf("got view\n%s\nwant (as the dashboard's fold folds it)\n%s", gb, wb)
			}
		})
	}
}

// recorded reads ui/testdata/frames/<name>, a frame a line.
func recorded(t *testing.T, name string) []json.RawMessage {
	t.Helper()
	file, err := os.Open(filepath.Join("..", "..", "ui", "testdata", "frames", name))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var out []json.RawMessage
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, json.RawMessage(l))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// neutralView is a View as the table writes it (neutral in fold.test.ts).
type neutralView struct {
	Items    []string          `json:"items"`
	Queued   []string          `json:"queued"`
	Receipts map[string]string `json:"receipts"`
	Turn     string            `json:"turn"`
	Mode     string            `json:"mode"`
	Model    string            `json:"model"`
	Commands string            `json:"commands"`
	Usage    string            `json:"usage"`
	Starting bool              `json:"starting"`
	Draft    string            `json:"draft"`
}

func neutral(v View) neutralView {
	n := neutralView{Items: lines(v.Items), Queued: lines(v.Queued), Receipts: map[string]string{}, Turn: "idle", Draft: v.Draft, Starting: v.Starting != ""}
	for id, r := range v.Receipts {
		n.Receipts[id] = r.State + opt(": ", r.Detail)
	}
	switch {
	case v.TurnActive && v.Stopping:
		n.Turn = "stopping"
	case v.TurnActive:
		n.Turn = "active"
	}
	if v.Mode != nil {
		n.Mode = v.Mode.Current + " of " + join(v.Mode.Available, func(o chat.ModeOption) string { return o.ID })
		n.Model = v.Mode.ModelName()
	}
	n.Commands = join(v.Commands, func(c chat.Command) string { return c.Name })
	if u := v.Usage; u != nil {
		n.Usage = fmt.Sprintf("in %d · out %d · $%s · context %d/%d", u.InputTokens, u.OutputTokens, num(u.CostUSD), u.ContextTokens, u.ContextWindow)
	}
	return n
}

func lines(items []Item) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, line(it))
	}
	return out
}

func line(it Item) string {
	switch it.Kind {
	case KindUser:
		return "user " + it.MessageID + opt(" (", it.From) + cond(it.From != "", ")") + ": " + it.Text +
			opt(" · files: ", join(it.Files, func(f chat.FileRef) string { return or(f.Path, f.Name) }))
	case KindAgent, KindThought:
		return it.Kind + ": " + it.Text
	case KindTool:
		return "tool " + it.Title + " · " + it.Tool + " · " + it.Status + opt(" · output: ", it.Output) +
			opt(" · diffs: ", join(it.Diffs, func(d chat.Diff) string { return d.Path })) +
			opt(" · at: ", join(it.Locations, func(l chat.Location) string {
				return l.Path + cond(l.Line != 0, ":"+strconv.Itoa(l.Line))
			}))
	case KindPlan:
		return "plan: " + strings.Join(mapped(it.Entries, func(e chat.PlanEntry) string { return "[" + e.Status + "] " + e.Content }), "; ")
	case KindPermission:
		return "permission " + it.RequestID + " " + it.Name + ": " + it.Title + " · " + it.State + opt(" · chose ", it.Chosen) + opt(" · ", it.Note) +
			opt(" · diffs: ", join(it.Diffs, func(d chat.Diff) string { return d.Path + " → " + d.NewText })) +
			" · options: " + join(it.Options, func(o chat.PermissionOption) string { return o.ID + "=" + o.Label })
	case KindQuestion:
		var answers []string
		for q, a := range it.Answers {
			s := a.Text
			if a.Labels != nil {
				s = "[" + strings.Join(a.Labels, ", ") + "]"
			}
			answers = append(answers, q+" → "+s)
		}
		slices.Sort(answers)
		return "question " + it.RequestID + ": " + strings.Join(mapped(it.Questions, func(q chat.QuestionItem) string { return q.Question }), " / ") +
			" · " + it.State + opt(" · ", strings.Join(answers, "; ")) + opt(" · said: ", it.Response) + opt(" · ", it.Note)
	case KindNotice:
		return "notice " + it.Level + ": " + it.Text
	case KindHandBack:
		return "handback: " + it.Text
	case KindUsage:
		return fmt.Sprintf("usage: in %d · out %d · $%s", it.Usage.InputTokens, it.Usage.OutputTokens, num(it.Usage.CostUSD))
	}
	return "unknown " + it.Kind
}

// num writes a number as JavaScript does (the shortest that reads back).
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func cond(ok bool, s string) string {
	if ok {
		return s
	}
	return ""
}

func mapped[T any](s []T, f func(T) string) []string {
	out := make([]string, 0, len(s))
	for _, x := range s {
		out = append(out, f(x))
	}
	return out
}

func join[T any](s []T, f func(T) string) string { return strings.Join(mapped(s, f), ", ") }
