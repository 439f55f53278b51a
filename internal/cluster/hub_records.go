package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/parleyhq/parley/internal/chat"
)

// serveRecords subscribes the hub to every node's records and summaries.
// What a node says of its threads (a summary, a thread gone, the list of
// them all) comes on one subscription, which NATS hands the hub in the
// order the node published and the hub handles one at a time: a summary
// still on its way behind a busy hub (its node stopped waiting for the
// answer) is never written after the deletion the node sent after it,
// which would bring the deleted thread back. Only one node's order matters,
// yet every node's go through that one goroutine, each a KV write: one
// node's link-up with thousands of threads delays the others' updates. A
// queue per node would lift that, should it show at scale.
func (h *Hub) serveRecords(threads jetstream.KeyValue) error {
	for subj, write := range map[string]func(context.Context, string, []string, []byte) error{
		dirSubject("*"): h.writeRecord,
		threadsSubject("*") + ".>": func(ctx context.Context, node string, rest []string, b []byte) error {
			switch {
			case len(rest) == 2 && rest[0] == sumToken:
				return h.writeSummary(ctx, threads, node, rest[1], b)
			case len(rest) == 2 && rest[0] == goneToken:
				return h.forgetThreads(ctx, node, func(thread string) bool { return thread == rest[1] })
			case len(rest) == 1 && rest[0] == allToken:
				return h.keepThreads(ctx, node, b)
			}
			return errors.New("not a subject of a node's threads")
		},
	} {
		if _, err := h.nc.Subscribe(subj, func(m *nats.Msg) {
			tok := strings.Split(m.Subject, ".")
			node, rest := tok[2], tok[4:] // parley.from.<node>.<dir|threads>.<rest>
			limit := maxRecord
			if len(rest) == 1 && rest[0] == allToken {
				limit = maxThreadList
			}
			err := h.acceptRecord(node, m.Data, limit)
			if err == nil && tok[3] == threadsToken && h.protocolRefused(node) {
				err = fmt.Errorf("machine %q's cluster protocol was refused (the hub's log says why)", node)
			}
			if err == nil && tok[3] == dirToken && h.refusingRecord() {
				err = errors.New("the hub is not taking records yet")
			}
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err = write(ctx, node, rest, m.Data)
				cancel()
			}
			if err != nil {
				h.log.Warn("cluster: refused a node's record", "node", node, "subject", m.Subject, "err", err)
			}
			// Answered only to the node's own inbox: the hub has every right,
			// and a reply subject is the publisher's choice. The answer
			// carries the hub's protocol, which the node checks in turn.
			if strings.HasPrefix(m.Reply, inboxPrefix(node)+".") {
				ans := nats.NewMsg(m.Reply)
				ans.Header.Set(hdrProtocol, strconv.Itoa(thisProtocol))
				if err != nil {
					ans.Data = []byte(err.Error())
				}
				if err := m.RespondMsg(ans); err != nil {
					h.log.Warn("cluster: could not answer a node's record", "node", node, "err", err)
				}
			}
			// A node on a protocol the hub does not take closes its link
			// once it reads why (the answer's header); until it does, or
			// for good if it is of protocol 1 (which does not check), the
			// hub takes none of its records. Its summaries may have come
			// before its record: it sends them all again at a link-up the
			// hub takes.
			if _, ok := errors.AsType[*ProtocolError](err); ok {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := h.purgeThreads(ctx, node); err != nil {
					h.log.Warn("cluster: purge the refused node's thread summaries", "node", node, "err", err)
				}
				cancel()
			}
		}); err != nil {
			return err
		}
	}
	return nil
}

// protocolRefused says whether node's last directory record was refused for
// its protocol.
func (h *Hub) protocolRefused(node string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.refused[node]
}

// refusingRecord takes one of the records tests asked the hub to refuse.
func (h *Hub) refusingRecord() bool {
	for {
		n := h.refuseRecords.Load()
		if n <= 0 {
			return false
		}
		if h.refuseRecords.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// acceptRecord says whether node may write: a joined node, a bounded value.
func (h *Hub) acceptRecord(node string, b []byte, limit int) error {
	h.mu.Lock()
	_, ok := h.reg.find(node)
	h.mu.Unlock()
	if !ok {
		return fmt.Errorf("no machine %q has joined this hub", node)
	}
	if len(b) > limit {
		return fmt.Errorf("%d bytes, more than %d", len(b), limit)
	}
	return nil
}

func (h *Hub) writeRecord(ctx context.Context, node string, _ []string, b []byte) error {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("not a directory record: %w", err)
	}
	if r.Node != node {
		return fmt.Errorf("a record of %q from machine %q", r.Node, node)
	}
	if err := h.checkProtocol(node, r); err != nil {
		return err
	}
	rev, err := h.nodes.Put(ctx, node, b)
	if err != nil {
		return err
	}
	return h.records.await(ctx, rev) // answered, the hub lists it
}

// checkProtocol refuses the record of a node whose protocol is more than one
// from the hub's (protocol.go), and its thread summaries until a record it
// takes, and names in the log, once for each protocol
// and version a node comes with, a node that links on the protocol before or
// after the hub's, or refused. Only the records' subscription calls it.
func (h *Hub) checkProtocol(node string, r Record) error {
	p := protocolOf(r.Protocol)
	err := checkProtocol(node, thisProtocol, p, h.opt.Version, r.Version)
	h.mu.Lock()
	if err != nil {
		h.refused[node] = true
	} else {
		delete(h.refused, node)
	}
	h.mu.Unlock()
	seen := fmt.Sprintf("%d %s", p, r.Version)
	if p == thisProtocol {
		delete(h.otherProtocol, node)
		return nil
	}
	if h.otherProtocol[node] == seen {
		return err
	}
	h.otherProtocol[node] = seen
	if err != nil {
		h.log.Error("cluster: link refused: "+err.Error(), "node", node, "node_protocol", p, "hub_protocol", thisProtocol,
			"node_version", r.Version, "hub_version", h.opt.Version)
		return err
	}
	h.log.Info(fmt.Sprintf("cluster: node %s speaks cluster protocol %d%s and this hub %d%s: linked, as they are one apart; "+
		"upgrade the older before the next protocol", node, p, versionNote(r.Version), thisProtocol, versionNote(h.opt.Version)),
		"node", node, "node_protocol", p, "hub_protocol", thisProtocol)
	return nil
}

func decodeRecord(_ string, b []byte) (Record, error) {
	var r Record
	err := json.Unmarshal(b, &r)
	return r, err
}

func (h *Hub) writeSummary(ctx context.Context, kv jetstream.KeyValue, node, thread string, b []byte) error {
	var w wireThread
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("not a thread summary: %w", err)
	}
	if string(w.ID) != thread || thread == "" {
		return errors.New("a thread summary under another thread's name")
	}
	key := ThreadKey(node, w.ID)
	// The same bytes again (a node tells every thread at each link-up,
	// most of them unchanged) are not written again: no new revision, no
	// reader woken. The hub is the bucket's only writer, and its copy holds
	// every write it answered.
	if h.summaries.same(key, b) {
		return nil
	}
	rev, err := kv.Put(ctx, key, b)
	if err != nil {
		return err
	}
	return h.summaries.await(ctx, rev) // answered, the hub lists it
}

// decodeSummary reads the summary under key <node>.<thread>.
func decodeSummary(key string, b []byte) (RemoteThread, error) {
	node, th, ok := strings.Cut(key, ".")
	var w wireThread
	if err := json.Unmarshal(b, &w); err != nil {
		return RemoteThread{}, err
	}
	if !ok || string(w.ID) != th {
		return RemoteThread{}, errors.New("a thread summary under another thread's key")
	}
	t := w.thread()
	t.ID, t.Node = RemoteID(node, t.ID), node
	return RemoteThread{Node: node, Thread: t, Cards: w.Cards, Turn: checkNotice(w.LastTurn), Error: checkNotice(w.LastError),
		Notices: checkNotices(w.Notices)}, nil
}

// keepThreads purges node's summaries of the threads its list does not
// name: deleted on the node while the hub was away.
func (h *Hub) keepThreads(ctx context.Context, node string, b []byte) error {
	var ids []chat.ThreadID
	if err := json.Unmarshal(b, &ids); err != nil {
		return fmt.Errorf("not a list of threads: %w", err)
	}
	keep := make(map[string]bool, len(ids))
	for _, id := range ids {
		keep[string(id)] = true
	}
	return h.forgetThreads(ctx, node, func(thread string) bool { return !keep[thread] })
}

// forgetThreads purges node's thread summaries that gone says are gone (the
// node deleted those threads), waits until the hub's copy no longer lists
// them, then tells HubOptions.ThreadGone of each. The node is the subject's
// (NATS lets a node publish only under its own name), so a node can only
// ever make its own threads leave.
func (h *Hub) forgetThreads(ctx context.Context, node string, gone func(thread string) bool) error {
	var ids []chat.ThreadID
	h.summaries.each(func(key string, v held[RemoteThread]) {
		if n, th, _ := strings.Cut(key, "."); n == node && gone(th) {
			ids = append(ids, v.val.Thread.ID)
		}
	})
	var errs []error
	var purged []chat.ThreadID
	for _, id := range ids {
		_, th, _ := SplitRemoteID(id)
		if err := h.threads.Purge(ctx, ThreadKey(node, th)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			errs = append(errs, err)
			continue
		}
		if err := h.copy.forget(ctx, id); err != nil {
			h.log.Warn("cluster: remove a deleted thread from the hub's copy", "thread", id, "err", err)
		}
		purged = append(purged, id)
	}
	if len(purged) > 0 {
		errs = append(errs, h.summaries.sync(ctx))
	}
	if h.opt.ThreadGone != nil {
		for _, id := range purged {
			h.opt.ThreadGone(id)
		}
	}
	for _, id := range purged {
		h.log.Info("cluster: a node's thread was deleted there", "thread", id)
	}
	return errors.Join(errs...)
}

// purgeThreads removes node's thread summaries from the directory (its
// machine left: its threads are no longer anywhere the hub can reach). Each
// key is purged on its own, so the purge reaches the bucket's watchers.
func (h *Hub) purgeThreads(ctx context.Context, node string) error {
	keys, err := h.threads.ListKeysFiltered(ctx, node+".>")
	if err != nil {
		return err
	}
	var errs []error
	for key := range keys.Keys() {
		if err := h.threads.Purge(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			errs = append(errs, err)
		}
	}
	// Returned, the copy no longer holds them: a summary told again after
	// this is written, never taken for one the copy still held (same).
	errs = append(errs, h.summaries.sync(ctx))
	return errors.Join(errs...)
}
