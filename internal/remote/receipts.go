package remote

import (
	"encoding/json"
	"sync"

	"github.com/parleyhq/parley/internal/chat"
)

// receipts keeps, at a cluster's hub, the newest receipt of the last
// messages the hub's routes sent to nodes' threads, as the nodes' logs say
// them (each relayed event passes see): a message sent again while its node
// does not answer is answered with the state its first copy reached
// (remote.resent), never an older one. A message is known by its input id
// (inputID: its route at the hub and its id), read from its user_message,
// whose from is the route as the node keeps the hub's; its delivery events
// follow it in the log. Bounded: the last receiptsKept messages.
type receipts struct {
	mu   sync.Mutex // a leaf (docs/locks.md)
	byID map[receiptKey]*receipt
	ring []receiptKey
	next int
}

// receiptsKept bounds the messages receipts remembers.
const receiptsKept = 4096

type receiptKey struct {
	thread    chat.ThreadID
	messageID string
}

type receipt struct {
	input string // the message's input id at the hub
	d     chat.Delivery
}

func newReceipts() *receipts {
	return &receipts{byID: make(map[receiptKey]*receipt, receiptsKept), ring: make([]receiptKey, receiptsKept)}
}

// see takes note of a relayed event of a node's thread (thread is its id
// at the hub).
func (r *receipts) see(ev chat.Event) {
	switch ev.Type {
	case chat.TypeUserMessage:
		var um chat.UserMessage
		if json.Unmarshal(ev.Payload, &um) != nil || um.From.Channel != hubChannel || um.MessageID == "" {
			return // not sent from this hub
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		k := receiptKey{ev.Thread, um.MessageID}
		if _, ok := r.byID[k]; ok {
			return
		}
		delete(r.byID, r.ring[r.next])
		r.ring[r.next] = k
		r.next = (r.next + 1) % len(r.ring)
		r.byID[k] = &receipt{input: um.From.Chat + "/" + um.MessageID}
	case chat.TypeDelivery:
		var d chat.Delivery
		if json.Unmarshal(ev.Payload, &d) != nil {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if rc := r.byID[receiptKey{ev.Thread, d.MessageID}]; rc != nil {
			rc.d = d
		}
	}
}

// get is the newest receipt of the message input (its input id) in thread.
func (r *receipts) get(thread chat.ThreadID, input, messageID string) (chat.Delivery, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rc := r.byID[receiptKey{thread, messageID}]
	if rc == nil || rc.input != input || rc.d.State == "" {
		return chat.Delivery{}, false
	}
	return rc.d, true
}
