// Package audit is parley's audit trail: an append-only list of what people,
// rules and machines did (sign-ins, pairings, revocations, joins, messages
// sent, card answers, config and rule changes, schedules and triggers run),
// each entry holding the SHA-256 of the entry before it, so a changed, deleted
// or reordered row breaks the chain and Verify names the first that does not
// match. Message text is never recorded: only ids, routes, devices, machines.
package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// Kinds of entry, each recorded at the one place its action happens.
const (
	KindSignIn        = "signin"
	KindSignOut       = "signout"
	KindPair          = "pair"
	KindDeviceRevoke  = "device.revoke"
	KindMachineJoin   = "machine.join"
	KindMachineRevoke = "machine.revoke"
	KindMessageSent   = "message.sent"
	KindCardAnswer    = "card.answer"
	KindRuleChange    = "rule.change"
	KindScheduleRun   = "schedule.run"
	KindTriggerRun    = "trigger.run"
	// An agent's own session continued in a thread (adopted, when its
	// terminal's pane is taken over or watched), and handed back to a terminal.
	KindSessionContinue = "session.continue"
	KindSessionHandBack = "session.handback"
	// Git actions on a thread's directory (its commit, branch, pull request).
	KindGitCommit = "git.commit"
	KindGitPush   = "git.push"
	KindGitPR     = "git.pr"
	// Schedules and triggers added, paused, resumed, removed.
	KindScheduleChange = "schedule.change"
	KindTriggerChange  = "trigger.change"
	// KindConfigChange is the daemon reading a config file that differs
	// from the one it read before (its SHA-256 in the detail).
	KindConfigChange = "config.change"
	// KindCheckpoint is written by pruning: its detail holds the seq and hash
	// of the last entry pruned, where the chain now starts.
	KindCheckpoint = "audit.checkpoint"
)

// Actor prefixes: who did it.
const (
	ActorDevice  = "device:"  // a signed-in device, by id
	ActorSurface = "surface:" // a route with no device (channel/chat: a plugin, ACP, the token)
	ActorRule    = "rule:"    // an approval rule, by number
	ActorMachine = "machine:" // a cluster machine, by name
	ActorCLI     = "cli"      // the parley command on this machine
	ActorParley  = "parley"   // parley itself (pruning, a schedule)
)

// HashSize is the length of an entry's hash.
const HashSize = sha256.Size

// Entry is one line of the trail.
type Entry struct {
	Seq      int64           `json:"seq"`
	TS       time.Time       `json:"ts"`
	Kind     string          `json:"kind"`
	Actor    string          `json:"actor"`
	Thread   string          `json:"thread,omitempty"`
	Subject  string          `json:"subject"`
	Detail   json.RawMessage `json:"detail,omitempty"`
	PrevHash Hash            `json:"prev_hash"`
	Hash     Hash            `json:"hash"`
}

// Hash is a SHA-256, written in hex.
type Hash []byte

func (h Hash) MarshalText() ([]byte, error) { return []byte(hex.EncodeToString(h)), nil }

func (h *Hash) UnmarshalText(b []byte) error {
	v, err := hex.DecodeString(string(b))
	*h = v
	return err
}

// Checkpoint is a checkpoint entry's detail.
type Checkpoint struct {
	Through int64 `json:"through"` // the last pruned entry's seq
	Hash    Hash  `json:"hash"`    // its hash: the next entry's prev_hash
}

// canonical is the entry's bytes the hash covers: every field but the hashes,
// each length-prefixed, so no two entries share bytes by moving a boundary.
func (e *Entry) canonical(buf []byte) []byte {
	buf = binary.BigEndian.AppendUint64(buf, uint64(e.Seq))
	buf = binary.BigEndian.AppendUint64(buf, uint64(e.TS.UnixNano()))
	for _, s := range [...]string{e.Kind, e.Actor, e.Thread, e.Subject} {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
		buf = append(buf, s...)
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(e.Detail)))
	return append(buf, e.Detail...)
}

// sum is SHA-256 over prev and the entry's canonical bytes.
func (e *Entry) sum(prev []byte, scratch []byte) ([HashSize]byte, []byte) {
	scratch = append(scratch[:0], prev...)
	scratch = e.canonical(scratch)
	return sha256.Sum256(scratch), scratch
}

// Seal links e after prev (the hash of the entry before it; nil for the first).
func (e *Entry) Seal(prev []byte) {
	h, _ := e.sum(prev, nil)
	e.PrevHash = append([]byte(nil), prev...)
	e.Hash = h[:]
}

// Verifier checks a chain read in seq order, one entry at a time.
type Verifier struct {
	n       int64
	last    Entry // seq and hash of the last entry seen
	anchor  []byte
	first   int64
	cp      *Checkpoint // the latest checkpoint seen
	scratch []byte
	err     error
}

// Mismatch is the first entry that does not match the chain.
type Mismatch struct {
	Seq    int64
	Reason string
}

func (m *Mismatch) Error() string {
	return fmt.Sprintf("audit entry %d does not match the chain: %s", m.Seq, m.Reason)
}

// Add checks one more entry (it keeps none of its slices). After the first
// mismatch it checks nothing more.
func (v *Verifier) Add(e *Entry) {
	if v.err != nil {
		return
	}
	fail := func(format string, a ...any) { v.err = &Mismatch{Seq: e.Seq, Reason: fmt.Sprintf(format, a...)} }
	if v.n == 0 {
		v.first = e.Seq
		if e.Seq == 1 && len(e.PrevHash) != 0 {
			fail("the first entry names an entry before it")
			return
		}
		v.anchor = append([]byte(nil), e.PrevHash...) // the entry's bytes are reused after Add
	} else {
		if e.Seq != v.last.Seq+1 {
			fail("entry %d should follow %d (a row was deleted or moved)", e.Seq, v.last.Seq)
			return
		}
		if !bytes.Equal(e.PrevHash, v.last.Hash) {
			fail("its prev_hash is not the hash of entry %d (a row was changed, deleted or moved)", v.last.Seq)
			return
		}
	}
	var h [HashSize]byte
	h, v.scratch = e.sum(e.PrevHash, v.scratch)
	if !bytes.Equal(h[:], e.Hash) {
		fail("its hash does not match its content (the row was changed)")
		return
	}
	if e.Kind == KindCheckpoint {
		var cp Checkpoint
		if err := json.Unmarshal(e.Detail, &cp); err != nil {
			fail("a checkpoint whose detail does not read: %v", err)
			return
		}
		v.cp = &cp
	}
	v.n++
	v.last.Seq, v.last.Hash = e.Seq, append(v.last.Hash[:0], e.Hash...)
}

// Result says how many entries matched, or names the first that did not: a
// chain that does not start at 1 must start where its latest checkpoint says
// pruning left it.
func (v *Verifier) Result() (int64, error) {
	if v.err != nil || v.n == 0 || v.first == 1 {
		return v.n, v.err
	}
	cp := v.cp
	switch {
	case cp == nil:
		return v.n, &Mismatch{Seq: v.first, Reason: fmt.Sprintf("the trail starts at %d with no checkpoint saying entries before it were pruned (rows were deleted)", v.first)}
	case cp.Through != v.first-1 || !bytes.Equal(cp.Hash, v.anchor):
		return v.n, &Mismatch{Seq: v.first, Reason: fmt.Sprintf("the latest checkpoint says pruning ended at %d, but the trail starts at %d (rows were deleted)", cp.Through, v.first)}
	}
	return v.n, nil
}

// Head is the last entry's seq and hash: where the next one links.
type Head struct {
	Seq  int64
	Hash Hash
}
