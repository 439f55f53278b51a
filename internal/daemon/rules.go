package daemon

import (
	"time"

	"github.com/parleyhq/parley/internal/rules"
)

// ruleSet is the config's [[rule]]s as the router asks them; a rule with
// `for` holds from the start (loaded at now). nil without rules.
func ruleSet(set []rules.Rule, now time.Time) func(rules.Call) rules.Verdict {
	if len(set) == 0 {
		return nil
	}
	set = append([]rules.Rule(nil), set...)
	for i := range set {
		if set[i].Since.IsZero() {
			set[i].Since = now
		}
	}
	return func(c rules.Call) rules.Verdict { return rules.Decide(set, c, time.Now()) }
}
