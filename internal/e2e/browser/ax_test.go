//go:build e2e

package browser

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// controlRoles are the roles a person operates.
var controlRoles = map[string]bool{"button": true, "checkbox": true, "textbox": true, "combobox": true, "link": true, "radio": true, "switch": true, "searchbox": true}

// axControls is every control in Chromium's accessibility tree of the page,
// role and name ("" when the control has none).
func axControls(t testing.TB, ctx context.Context) [][2]string {
	t.Helper()
	var out [][2]string
	run(t, ctx, "read the accessibility tree", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		res, err := cdp.Call(ctx, tg, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
		if err != nil {
			return err
		}
		str := func(v *accessibility.Value) string {
			var s string
			if v != nil {
				_ = json.Unmarshal(v.Value, &s)
			}
			return s
		}
		for _, n := range res.Nodes {
			if role := str(n.Role); !n.Ignored && controlRoles[role] {
				out = append(out, [2]string{role, str(n.Name)})
			}
		}
		return nil
	}))
	return out
}

// axNamed fails the test for a control with no accessible name, and reports
// whether one of role is named name.
func axNamed(t testing.TB, ctx context.Context, role, name string) bool {
	t.Helper()
	found := false
	for _, c := range axControls(t, ctx) {
		if c[1] == "" {
			t.Errorf("a %s has no accessible name", c[0])
		}
		found = found || (c[0] == role && c[1] == name)
	}
	return found
}
