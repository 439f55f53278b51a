package push

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// Remote is, at a cluster's hub, other machines' threads as each machine last
// told the hub (its thread summaries in the directory, written from its own
// store): their open cards, their newest finished turn and newest error. The
// hub's push service reconciles them against its own outbox, keyed by card
// or by event seq as its own threads' are: the machine's store stays the
// only truth of its threads, the hub's outbox the only record of what was
// pushed. A machine that is away keeps its last summary, so its cards are
// neither pushed again nor closed until it tells otherwise.
type Remote interface {
	// Owns says whether an id is another machine's thread.
	Owns(id chat.ThreadID) bool
	// Ready has a value when Take has something to tell.
	Ready() <-chan struct{}
	// Take is the threads changed since the last Take (what Thread says of
	// them may differ), or all: any may have (the first Take says all). A
	// hub with thousands of other machines' threads then looks at the few
	// that changed, not at every one at each change.
	Take() (ids []chat.ThreadID, all bool)
	// Thread is one of the other machines' threads; false: not listed.
	Thread(id chat.ThreadID) (RemoteThread, bool)
	// Threads lists the other machines' threads.
	Threads() []RemoteThread
}

// RemoteThread is another machine's thread.
type RemoteThread struct {
	Thread    chat.Thread // its id at the hub, Node its machine
	AgentName string      // its agent's name on that machine ("" shows the id)
	Cards     []Card
	// Turn and Error are its newest finished turn and newest error that
	// call for an optional push (NoticeOf, on that machine); nil: none.
	Turn, Error *Notice
	// Notices are its newest notice events (NoticeEvent, on that machine),
	// oldest first: each pushed once, by its seq, to the devices that
	// turned notices on.
	Notices []Notice
	// Joined is when its machine joined this hub (the hub's clock): a
	// notice from before is pushed to no one.
	Joined time.Time
}

// reconcileRemote reconciles the remote threads whose open cards or notices
// changed since the last look (those Remote.Take names; every one when it
// says all), those that left the list (their cards closed, or the thread is
// gone), those the store refused before, and also (at start) the ids given
// (remote threads whose outbox holds an open push not closed).
func (s *Service) reconcileRemote(ctx context.Context, also []chat.ThreadID) {
	if s.notices == nil {
		s.notices = map[chat.ThreadID]string{}
	}
	look := map[chat.ThreadID]bool{} // the threads to compare with what was reconciled
	get := s.opt.Remote.Thread
	changed, all := s.opt.Remote.Take()
	if all {
		now := map[chat.ThreadID]RemoteThread{}
		for _, rt := range s.opt.Remote.Threads() {
			now[rt.Thread.ID] = rt
			look[rt.Thread.ID] = true
		}
		get = func(id chat.ThreadID) (RemoteThread, bool) { rt, ok := now[id]; return rt, ok }
		for id := range s.remote {
			look[id] = true
		}
		for id := range s.notices {
			look[id] = true
		}
	}
	for _, id := range changed {
		look[id] = true
	}
	cards, notices := map[chat.ThreadID]bool{}, map[chat.ThreadID]bool{}
	for _, id := range also {
		cards[id] = true
	}
	for id := range s.remoteFailed {
		cards[id], notices[id] = true, true
	}
	clear(s.remoteFailed)
	now := map[chat.ThreadID]RemoteThread{} // each thread looked at that is listed
	for id := range look {
		rt, listed := get(id)
		if !listed {
			if _, ok := s.remote[id]; ok {
				cards[id] = true
			}
			delete(s.notices, id)
			continue
		}
		now[id] = rt
		if cardsKey(rt.Cards) != s.remote[id] {
			cards[id] = true
		}
		if noticesKey(rt) != s.notices[id] {
			notices[id] = true
		}
	}
	for id := range cards { // those given or refused before, not looked at
		if !look[id] {
			if rt, listed := get(id); listed {
				now[id] = rt
			}
		}
	}
	var on map[string]store.PushPrefs
	onRead := false
	todo := maps.Clone(cards)
	maps.Copy(todo, notices)
	for _, id := range slices.Sorted(maps.Keys(todo)) {
		rt, listed := now[id]
		th := rt.Thread
		th.Agent = cmp.Or(rt.AgentName, th.Agent)
		thread := func() (chat.Thread, error) { return th, nil }
		var err error
		if cards[id] {
			if err = s.reconcileOpen(ctx, id, thread, rt.Cards); err == nil {
				if k := cardsKey(rt.Cards); listed && k != "" {
					s.remote[id] = k
				} else {
					delete(s.remote, id)
				}
			}
		}
		if notices[id] && listed && err == nil {
			if !onRead {
				on, err = s.optIns(ctx)
				onRead = err == nil
			}
			if err == nil {
				err = s.enqueueNotices(ctx, id, thread, rt.notices(), on, later(rt.Joined, s.since))
			}
			if err == nil {
				s.notices[id] = noticesKey(rt)
			}
		}
		if err != nil {
			s.log.Error("push: could not queue another machine's thread's pushes; trying again", "thread", id, "err", err)
			if s.remoteFailed == nil {
				s.remoteFailed = map[chat.ThreadID]bool{}
			}
			s.remoteFailed[id] = true
		}
	}
}

// notices are a remote thread's notices, each with its kind.
func (rt RemoteThread) notices() []notice {
	var ns []notice
	if rt.Turn != nil {
		ns = append(ns, notice{kind: store.PushTurn, Notice: *rt.Turn})
	}
	if rt.Error != nil {
		ns = append(ns, notice{kind: store.PushError, Notice: *rt.Error})
	}
	for _, n := range rt.Notices {
		ns = append(ns, notice{kind: store.PushNotice, Notice: n, text: n.Text})
	}
	return ns
}

// cardsKey names a set of open cards (what changed is which are open).
func cardsKey(cs []Card) string {
	ids := make([]string, 0, len(cs))
	for _, c := range cs {
		ids = append(ids, c.RequestID)
	}
	slices.Sort(ids)
	return strings.Join(ids, "\x00")
}

// noticesKey names a remote thread's notices (what changed is their seqs).
func noticesKey(rt RemoteThread) string {
	var k string
	for _, n := range rt.notices() {
		k += n.kind + ":" + strconv.FormatInt(n.Seq, 10) + " "
	}
	return k
}

// SinceFile, in the data directory, keeps when this hub first pushed other
// machines' notices. With the machine's join, it bounds what a notice may
// be: one from before either (a turn a machine finished before it joined,
// or before the hub was upgraded to push them) is pushed to no one, so
// neither a join nor an upgrade sends the threads' past. Both times are the
// hub's, a notice's is its machine's: clocks a minute apart move the line by
// a minute.
const SinceFile = "push-notices-since"

// loadSince reads SinceFile, or writes it with now: the first start. One
// that cannot be read is written anew (the line moves to now: a notice from
// between is not pushed, none is pushed twice).
func (s *Service) loadSince() time.Time {
	if s.opt.DataDir == "" {
		return s.opt.Clock.Now()
	}
	path := filepath.Join(s.opt.DataDir, SinceFile)
	b, err := os.ReadFile(path)
	if err == nil {
		var t time.Time
		if err = t.UnmarshalText(bytes.TrimSpace(b)); err == nil {
			return t
		}
	}
	if !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("push: could not read since when this hub pushes other machines' notices; from now on", "err", err)
	}
	now := s.opt.Clock.Now().UTC()
	tmp := path + ".tmp"
	err = os.WriteFile(tmp, []byte(now.Format(time.RFC3339Nano)+"\n"), 0o600)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		s.log.Warn("push: could not keep since when this hub pushes other machines' notices", "err", err)
	}
	return now
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
