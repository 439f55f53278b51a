// What the agents reported they spent, summed across threads: GET /api/usage.

package web

import (
	"cmp"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// UsageSum is one group's totals: the turns that reported usage, their
// tokens and their cost.
type UsageSum struct {
	Key          string  `json:"key"`             // the day (YYYY-MM-DD), agent, machine or thread id
	Title        string  `json:"title,omitempty"` // a thread's title, for threads
	Node         string  `json:"node,omitempty"`  // a thread's or an agent's machine, at a hub
	Turns        int64   `json:"turns"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

func (u *UsageSum) add(r store.UsageRow) {
	x := r.Usage
	switch {
	case r.Turns > 0:
		u.Turns += r.Turns
	case x.InputTokens != 0 || x.OutputTokens != 0 || x.CostUSD != 0:
		u.Turns++ // a context-only report is no turn (store.Usage counts the same)
	}
	u.InputTokens += x.InputTokens
	u.OutputTokens += x.OutputTokens
	u.CostUSD += x.CostUSD
}

// maxUsageDays bounds ?days=: the Usage view reads at most a year of events.
const maxUsageDays = 366

// handleUsage sums the usage events of the last ?days= days (30 unless
// said; 0: all kept), per day in ?tz= (an IANA zone, else the server's),
// per agent, per machine and per thread. At a cluster's hub nodes' threads
// are included as totals when their machines answer (their days unknown).
func (s *Server) handleUsage(w http.ResponseWriter, r *http.Request) {
	lister, ok := s.store.(store.UsageLister)
	if !ok {
		httpError(w, http.StatusNotFound, "this parley's store does not list usage")
		return
	}
	days, err := queryInt(r, "days", 30)
	if err != nil || days > maxUsageDays {
		httpError(w, http.StatusBadRequest, "days must be a whole number from 0 (all) to 366")
		return
	}
	loc := time.Local
	if tz := r.URL.Query().Get("tz"); tz != "" {
		if loc, err = time.LoadLocation(tz); err != nil {
			httpError(w, http.StatusBadRequest, "tz is not a time zone this machine knows: "+tz)
			return
		}
	}
	var since time.Time
	if days > 0 {
		y, m, d := time.Now().In(loc).Date()
		since = time.Date(y, m, d-(days-1), 0, 0, 0, 0, loc)
	}
	rows, err := lister.UsageSince(r.Context(), since)
	if err != nil {
		writeErr(w, err)
		return
	}
	titles := map[chat.ThreadID]string{}
	if ths, err := s.store.Threads(r.Context()); err == nil {
		for _, th := range ths {
			titles[th.ID] = th.Title
		}
	}
	local := ""
	if s.opt.Cluster != nil {
		local = s.opt.Cluster.Node()
	}
	type groups map[string]*UsageSum
	byDay, byAgent, byMachine, byThread := groups{}, groups{}, groups{}, groups{}
	sum := func(g groups, key string) *UsageSum {
		if g[key] == nil {
			g[key] = &UsageSum{Key: key}
		}
		return g[key]
	}
	var total UsageSum
	undated := false
	for _, row := range rows {
		node := cmp.Or(row.Node, local)
		total.add(row)
		if row.At.IsZero() {
			undated = true
		} else {
			sum(byDay, row.At.In(loc).Format(time.DateOnly)).add(row)
		}
		a := sum(byAgent, node+"/"+row.Agent)
		a.Key, a.Node = row.Agent, node
		a.add(row)
		sum(byMachine, node).add(row)
		t := sum(byThread, string(row.Thread))
		t.Title, t.Node = titles[row.Thread], node
		t.add(row)
	}
	list := func(g groups, order func(a, b *UsageSum) int) []*UsageSum {
		out := make([]*UsageSum, 0, len(g))
		for _, u := range g {
			u.CostUSD = math.Round(u.CostUSD*1e9) / 1e9
			out = append(out, u)
		}
		slices.SortFunc(out, order)
		return out
	}
	// Days newest first; the rest by cost, then tokens: what spent most on top.
	newest := func(a, b *UsageSum) int { return cmp.Compare(b.Key, a.Key) }
	most := func(a, b *UsageSum) int {
		return cmp.Or(cmp.Compare(b.CostUSD, a.CostUSD), cmp.Compare(b.InputTokens+b.OutputTokens, a.InputTokens+a.OutputTokens), cmp.Compare(a.Key, b.Key))
	}
	total.CostUSD = math.Round(total.CostUSD*1e9) / 1e9
	out := map[string]any{
		"days": days, "tz": loc.String(), "total": total,
		"by_day": list(byDay, newest), "by_agent": list(byAgent, most),
		"by_machine": list(byMachine, most), "by_thread": list(byThread, most),
	}
	if undated {
		out["undated"] = "other machines' threads are counted as totals: their days are not known at the hub"
	}
	writeJSON(w, http.StatusOK, out)
}

// handleNoSuchAPI answers a path under /api/ that names nothing with 404 and
// the JSON error shape, not the dashboard's page: a script sees its mistake.
func (s *Server) handleNoSuchAPI(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]string{
		"code": chat.CodeNotFound, "message": "no such API: " + r.Method + " " + r.URL.Path}})
}
