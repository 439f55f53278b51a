package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A node's directory record and thread summaries reach the hub as plain
// requests on its own parley.from.<node>.dir and parley.from.<node>.sum.<thread>;
// the hub checks them and writes the KV entries itself, keyed by the node
// named in the SUBJECT (which NATS lets only that node publish). A node may
// publish to no $KV key nor any subject a stream captures: a KV write lets a
// header (Nats-Rollup) wipe other nodes' keys, and any JetStream publish
// sends its ack to a reply subject the publisher picks.
const (
	dirToken = "dir"
	sumToken = "sum"
	// maxRecord is the most a record or summary may weigh (the buckets' MaxValueSize).
	maxRecord = 64 << 10
)

func dirSubject(node string) string { return FromSubject(node) + "." + dirToken }

func sumSubject(node string, thread string) string {
	return FromSubject(node) + "." + sumToken + "." + thread
}

// serveRecords subscribes the hub to every node's records and summaries.
func (h *Hub) serveRecords(threads jetstream.KeyValue) error {
	for subj, write := range map[string]func(context.Context, string, []string, []byte) error{
		"parley.from.*." + dirToken: h.writeRecord,
		"parley.from.*." + sumToken + ".*": func(ctx context.Context, node string, rest []string, b []byte) error {
			return h.writeSummary(ctx, threads, node, rest[0], b)
		},
	} {
		if _, err := h.nc.Subscribe(subj, func(m *nats.Msg) {
			tok := strings.Split(m.Subject, ".")
			node := tok[2]
			err := h.acceptRecord(node, m.Data)
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err = write(ctx, node, tok[4:], m.Data)
				cancel()
			}
			if err != nil {
				h.log.Warn("cluster: refused a node's record", "node", node, "subject", m.Subject, "err", err)
			}
			// Answered only to the node's own inbox: the hub has every right,
			// and a reply subject is the publisher's choice.
			if !strings.HasPrefix(m.Reply, inboxPrefix(node)+".") {
				return
			}
			var ans []byte
			if err != nil {
				ans = []byte(err.Error())
			}
			if err := m.Respond(ans); err != nil {
				h.log.Warn("cluster: could not answer a node's record", "node", node, "err", err)
			}
		}); err != nil {
			return err
		}
	}
	return nil
}

// acceptRecord says whether node may write: a joined node, a bounded value.
func (h *Hub) acceptRecord(node string, b []byte) error {
	h.mu.Lock()
	_, ok := h.reg.find(node)
	h.mu.Unlock()
	if !ok {
		return fmt.Errorf("no machine %q has joined this hub", node)
	}
	if len(b) > maxRecord {
		return fmt.Errorf("%d bytes, more than %d", len(b), maxRecord)
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
	rev, err := h.nodes.Put(ctx, node, b)
	if err != nil {
		return err
	}
	return h.records.await(ctx, rev) // answered, the hub lists it
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
	rev, err := kv.Put(ctx, ThreadKey(node, w.ID), b)
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
	return RemoteThread{Node: node, Thread: t}, nil
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
	return errors.Join(errs...)
}

// publishRecord sends one of the node's records to the hub and waits for it
// to be written.
func (l *Link) publishRecord(ctx context.Context, subject string, b []byte) error {
	ans, err := l.nc.RequestWithContext(ctx, subject, b)
	if err != nil {
		return err
	}
	if len(ans.Data) > 0 {
		return fmt.Errorf("the hub refused it: %s", ans.Data)
	}
	return nil
}
