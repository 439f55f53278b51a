package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

var _ store.UsageLister = (*View)(nil)

// UsageSince lists the hub's own usage events, then each online node's
// thread touched since then as one undated row of its totals (asked of its
// node, all within searchWait): a node keeps its events, the hub only their
// summaries. A node that is offline or does not answer in time is left out.
func (v *View) UsageSince(ctx context.Context, since time.Time) ([]store.UsageRow, error) {
	own, ok := v.Store.(store.UsageLister)
	if !ok {
		return nil, errors.New("cluster: the hub's store does not list usage")
	}
	out, err := own.UsageSince(ctx, since)
	if err != nil {
		return nil, err
	}
	nodes, err := v.hub.Nodes(ctx)
	if err != nil {
		return out, nil
	}
	online := map[string]bool{}
	for _, n := range nodes {
		online[n.Name] = n.Online
	}
	rts, err := v.hub.Threads(ctx)
	if err != nil {
		return out, nil
	}
	ctx, cancel := context.WithTimeout(ctx, searchWait)
	defer cancel()
	for _, rt := range rts {
		if !online[rt.Node] || rt.Thread.UpdatedAt.Before(since) {
			continue
		}
		t, err := v.src.Usage(ctx, rt.Thread.ID)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if t.InputTokens == 0 && t.OutputTokens == 0 && t.CostUSD == 0 {
			continue
		}
		out = append(out, store.UsageRow{Thread: rt.Thread.ID, Agent: rt.Thread.Agent, Node: rt.Node,
			Usage: chat.Usage{InputTokens: t.InputTokens, OutputTokens: t.OutputTokens, CostUSD: t.CostUSD}, Turns: t.Turns})
	}
	return out, nil
}
