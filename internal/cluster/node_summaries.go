package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/chat"
)

// Bounds of a summary's open cards: it must fit a directory value (64 KiB)
// whatever the agent asks. Only the newest maxSummaryCards are told (the
// hub's list shows the newest, as a machine's own does), and none with a
// longer request id (the hub pushes none for them).
const (
	maxSummaryCards = 16
	maxCardID       = 256
	maxCardAsks     = 160
)

// openCards is what a summary tells of a thread's open cards (cs oldest
// first, as the store lists them): the newest, oldest first.
func openCards(cs []chat.Card) []OpenCard {
	var out []OpenCard
	for i := len(cs) - 1; i >= 0 && len(out) < maxSummaryCards; i-- {
		c := cs[i]
		if c.RequestID == "" || len(c.RequestID) > maxCardID {
			continue
		}
		asks := c.Asks()
		if len(asks) > maxCardAsks {
			asks = strings.ToValidUTF8(asks[:maxCardAsks], "") + "…"
		}
		out = append(out, OpenCard{RequestID: c.RequestID, Kind: c.Kind, Asks: asks})
	}
	slices.Reverse(out)
	return out
}

func toWire(th chat.Thread) wireThread { return wireThread{Thread: th, Turn: th.TurnMessageID} }

// summaries writes each changed thread's summary, and every thread's at each
// link-up (those changed while the hub was away) and after a failed write,
// tried again after summaryRetry, doubling to summaryRetryMax.
func (l *Link) summaries() {
	defer l.wg.Done()
	retry := time.NewTimer(summaryRetry)
	retry.Stop()
	defer retry.Stop()
	all := true
	var delay time.Duration // the wait before the next retry; 0 after a good write
	for {
		var again <-chan time.Time // set while a retry is due
		if l.nc.IsConnected() {
			var err error
			if all {
				err = l.writeAllSummaries()
			} else {
				err = l.writeSummaries(l.changed())
			}
			// A failed write is made good by writing them all, after a
			// wait, whether or not anything changes meanwhile (a card
			// answered here must not stay open in the hub's list until the
			// next change); a lost link is made good at its link-up.
			all = err != nil
			if err != nil {
				delay = min(max(2*delay, summaryRetry), summaryRetryMax)
				l.log.Warn("cluster: thread summaries; trying again", "err", err, "in", delay)
				retry.Reset(delay)
				again = retry.C
			} else {
				delay = 0
			}
		}
		select {
		case <-l.done:
			return
		case <-l.watch.Ready():
		case <-l.noticeWatch.Ready():
		case <-l.upKick:
			all = true
		case <-again:
		}
		retry.Stop()
	}
}

// A failed write of the thread summaries is tried again after summaryRetry,
// doubling to summaryRetryMax while it keeps failing.
const (
	summaryRetry    = time.Second
	summaryRetryMax = 30 * time.Second
)

func (l *Link) writeAllSummaries() error {
	l.changed() // every thread is written below
	// No deadline for them all (each summary has its own): a node with
	// thousands of threads on a slow link must finish, not start again.
	ctx := l.life
	ths, err := l.opt.Store.Threads(ctx)
	if err != nil {
		return err
	}
	ids := make([]chat.ThreadID, 0, len(ths))
	for _, th := range ths {
		if err := l.putSummary(ctx, th); err != nil {
			return err
		}
		ids = append(ids, th.ID)
	}
	// The hub purges this node's summaries of threads not named: deleted
	// while it was away. A thread made meanwhile is written after this (the
	// watcher marked it), so it is never purged.
	b, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	if len(b) > maxThreadList {
		l.log.Warn("cluster: too many threads to name at link-up; the hub may still list some deleted while it was away", "threads", len(ids))
		return nil
	}
	sctx, scancel := context.WithTimeout(ctx, summaryTimeout)
	defer scancel()
	return l.publishRecord(sctx, threadListSubject(l.opt.Node), b)
}

func (l *Link) writeSummaries(ids []chat.ThreadID) error {
	ctx, cancel := context.WithTimeout(l.life, time.Minute)
	defer cancel()
	for _, id := range ids {
		th, err := l.opt.Store.Thread(ctx, id)
		if errors.Is(err, chat.ErrNotFound) {
			// Deleted here: the hub drops its summary and ends its views.
			delete(l.notices, id)
			gctx, cancel := context.WithTimeout(ctx, summaryTimeout)
			err = l.publishRecord(gctx, goneSubject(l.opt.Node, string(id)), nil)
			cancel()
			if err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if err := l.putSummary(ctx, th); err != nil {
			return err
		}
	}
	return nil
}

func (l *Link) putSummary(ctx context.Context, th chat.Thread) error {
	w := toWire(th)
	cards, err := l.opt.Store.Cards(ctx, th.ID, chat.CardOpen)
	if err != nil {
		return err
	}
	w.Cards = openCards(cards)
	n, err := l.noticesOf(ctx, th.ID)
	if err != nil {
		return err
	}
	w.LastTurn, w.LastError, w.Notices = n.turn, n.err, n.notices
	b, err := json.Marshal(w)
	if err != nil {
		return err
	}
	// One record's answer is waited for briefly: a hub killed after the
	// request left never answers it, and the summaries after it (all of
	// them, at the link-up that follows) must not wait for that.
	ctx, cancel := context.WithTimeout(ctx, summaryTimeout)
	defer cancel()
	return l.publishRecord(ctx, sumSubject(l.opt.Node, string(th.ID)), b)
}

// summaryTimeout bounds the wait for the hub's answer to one summary.
const summaryTimeout = 10 * time.Second
