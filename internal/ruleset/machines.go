package ruleset

// A cluster's rules: each machine's rules answer its own cards (the rule
// lives where the card is answered, so a node answers by rule with the hub
// away). At the hub, a machine named in a call (the API's ?machine=M) is
// reached with one request to that node's Set (Serve), answered there: its
// list, an add, change or removal kept in its own SQLite, a test against its
// rules. A node that does not answer is an error saying so (chat.ErrAway),
// never a half-made change: the hub keeps nothing of a node's rules. A node
// that may have had the request but whose answer did not come (too slow,
// the link cut) is chat.ErrUnanswered, saying what may have happened there
// and whether the same request can be sent again: an add with its id
// (Spec.ID) is kept once, a change or removal done twice is done once.

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/chat"
)

// Remote is a cluster's other machines, as the hub reaches their rules.
type Remote interface {
	// Ask sends req to machine's Set (its Serve) and returns its answer; an
	// error wrapping chat.ErrAway when the machine does not answer, and
	// chat.ErrBadInput when no such machine is joined.
	Ask(ctx context.Context, machine string, req []byte) ([]byte, error)
}

// Request is what the hub asks a node's Set.
type Request struct {
	Op    string `json:"op"` // list, add, update, rm, test
	ID    string `json:"id,omitempty"`
	Spec  *Spec  `json:"spec,omitempty"`
	Probe *Probe `json:"probe,omitempty"`
	// Who asks, for the node's created_by and its audit trail: the hub's
	// name, the person's device there (By, as the hub's list names it) and
	// the hub's actor for them (Actor, "device:<id>", "token").
	Hub   string `json:"hub,omitempty"`
	By    string `json:"by,omitempty"`
	Actor string `json:"actor,omitempty"`
}

// Request operations.
const (
	OpList   = "list"
	OpAdd    = "add"
	OpUpdate = "update"
	OpRemove = "rm"
	OpTest   = "test"
)

// Reply is a node's answer: its rules (list), the one (add, update), a
// test's answer, or an error with its kind.
type Reply struct {
	Rules []Entry `json:"rules,omitempty"`
	Rule  *Entry  `json:"rule,omitempty"`
	Test  *Answer `json:"test,omitempty"`
	// Existed: the add's id names the rule an earlier try of the same add
	// made; nothing changed.
	Existed bool   `json:"existed,omitempty"`
	Error   string `json:"error,omitempty"`
	Code    string `json:"code,omitempty"` // chat.CodeOf the error
}

// viaHub marks a change the hub asked for, for record.
type viaHub struct{}

type hubCaller struct{ hub, by, actor string }

// Serve answers one of the hub's requests with this machine's rules.
func (s *Set) Serve(ctx context.Context, b []byte) []byte {
	var req Request
	var rep Reply
	var err error
	if jerr := json.Unmarshal(b, &req); jerr != nil {
		err = chat.BadInput("a rules request must be JSON")
	} else {
		rep, err = s.serve(ctx, req)
	}
	if err != nil {
		rep = Reply{Error: err.Error(), Code: chat.CodeOf(err)}
	}
	out, _ := json.Marshal(rep)
	return out
}

func (s *Set) serve(ctx context.Context, req Request) (Reply, error) {
	hub := req.Hub
	if hub == "" {
		hub = "hub" // a hub always names itself; this is only a fallback
	}
	by := req.By
	if by == "" {
		by = audit.ActorCLI
	}
	ctx = context.WithValue(audit.WithActor(ctx, audit.ActorMachine+hub), viaHub{}, hubCaller{hub: hub, by: by, actor: req.Actor})
	one := func(e Entry, err error) (Reply, error) {
		if err != nil {
			return Reply{}, err
		}
		return Reply{Rule: &e}, nil
	}
	switch req.Op {
	case OpList:
		return Reply{Rules: s.List()}, nil
	case OpAdd, OpUpdate:
		if req.Spec == nil {
			return Reply{}, chat.BadInput("the request names no rule")
		}
		if req.Op == OpAdd {
			e, existed, err := s.add(ctx, *req.Spec, by+" at "+hub)
			rep, err := one(e, err)
			rep.Existed = existed
			return rep, err
		}
		return one(s.Update(ctx, req.ID, *req.Spec))
	case OpRemove:
		return Reply{}, s.Remove(ctx, req.ID)
	case OpTest:
		if req.Probe == nil {
			return Reply{}, chat.BadInput("the request names no call to test")
		}
		a, err := s.Test(*req.Probe)
		if err != nil {
			return Reply{}, err
		}
		return Reply{Test: &a}, nil
	}
	return Reply{}, chat.BadInput("unknown rules operation %q", req.Op)
}

// remote says whether machine names another machine, whose rules a request
// reaches; "" and this machine's own name are this machine's.
func (s *Set) remote(machine string) (bool, error) {
	if machine == "" || machine == s.opt.Node {
		return false, nil
	}
	if s.opt.Remote == nil {
		return false, chat.BadInput("machine %q: this machine is not a cluster's hub, and its rules are its own: change machine %s's rules there, or at its hub",
			machine, machine)
	}
	return true, nil
}

// ask sends req to machine and reads its reply as this machine's errors.
func (s *Set) ask(ctx context.Context, machine string, req Request) (Reply, error) {
	req.Hub, req.Actor = s.opt.Node, audit.ActorFrom(ctx)
	b, _ := json.Marshal(req)
	out, err := s.opt.Remote.Ask(ctx, machine, b)
	if err != nil && req.Op != OpList && req.Op != OpTest && !chat.NeverHad(err) {
		return Reply{}, unansweredChange(machine, req, err)
	}
	if err != nil {
		return Reply{}, err
	}
	var rep Reply
	if err := json.Unmarshal(out, &rep); err != nil {
		return Reply{}, fmt.Errorf("machine %s answered something that is not a rules answer", machine)
	}
	if rep.Error != "" {
		return Reply{}, chat.ErrorOf(rep.Code, "machine "+machine+": "+rep.Error)
	}
	return rep, nil
}

// unansweredChange says what may have happened on machine when req's
// answer did not come (err), and whether sending it again is safe.
func unansweredChange(machine string, req Request, err error) error {
	var done string
	switch {
	case req.Op == OpAdd && req.Spec != nil && req.Spec.ID != "":
		done = fmt.Sprintf("the rule may have been made there; the same add (id %s) can be sent again safely: it is made once", req.Spec.ID)
	case req.Op == OpAdd:
		done = "the rule may have been made there: list its rules to see before adding it again (an add with an id can be sent again safely)"
	case req.Op == OpRemove:
		done = fmt.Sprintf("rule %s may have been removed there; removing it again is safe (once removed, it answers not found)", req.ID)
	default:
		done = fmt.Sprintf("rule %s may have been changed there; the same change again is safe", req.ID)
	}
	return chat.Unanswered(machine, err, done)
}

// ListAt is machine's rules in their order ("" this machine's).
func (s *Set) ListAt(ctx context.Context, machine string) ([]Entry, error) {
	if far, err := s.remote(machine); !far {
		return s.List(), err
	}
	rep, err := s.ask(ctx, machine, Request{Op: OpList})
	return rep.Rules, err
}

// AddAt keeps a new rule on machine, made by the named device here.
func (s *Set) AddAt(ctx context.Context, machine string, sp Spec, by string) (Entry, error) {
	e, _, err := s.addAt(ctx, machine, sp, by)
	return e, err
}

// addAt is AddAt also saying whether the rule was kept already: the add's
// id names the rule an earlier try of the same add made.
func (s *Set) addAt(ctx context.Context, machine string, sp Spec, by string) (Entry, bool, error) {
	if far, err := s.remote(machine); err != nil {
		return Entry{}, false, err
	} else if !far {
		return s.add(ctx, sp, by)
	}
	// Said here, before the node is asked (an older node would ignore the id).
	if err := check(sp); err != nil {
		return Entry{}, false, err
	}
	if sp.ID != "" {
		if err := chat.CheckAddID("rule", sp.ID); err != nil {
			return Entry{}, false, err
		}
	}
	rep, err := s.ask(ctx, machine, Request{Op: OpAdd, Spec: &sp, By: by})
	if err != nil {
		return Entry{}, false, err
	}
	if rep.Rule == nil {
		return Entry{}, false, fmt.Errorf("machine %s answered an add with no rule", machine)
	}
	// A repeat is recorded here too: the first try's answer, and so its
	// record at this hub, may be what was lost (the node's trail has it once).
	verb := "made"
	if rep.Existed {
		verb = "made (the same add sent again)"
	}
	s.recordAt(ctx, machine, rep.Rule.ID, verb, &sp)
	return *rep.Rule, rep.Existed, nil
}

// UpdateAt changes machine's stored rule id in place.
func (s *Set) UpdateAt(ctx context.Context, machine, id string, sp Spec) (Entry, error) {
	if far, err := s.remote(machine); err != nil {
		return Entry{}, err
	} else if !far {
		return s.Update(ctx, id, sp)
	}
	if err := check(sp); err != nil {
		return Entry{}, err
	}
	rep, err := s.ask(ctx, machine, Request{Op: OpUpdate, ID: id, Spec: &sp})
	if err != nil {
		return Entry{}, err
	}
	if rep.Rule == nil {
		return Entry{}, fmt.Errorf("machine %s answered a change with no rule", machine)
	}
	s.recordAt(ctx, machine, id, "changed", &sp)
	return *rep.Rule, nil
}

// RemoveAt deletes machine's stored rule id.
func (s *Set) RemoveAt(ctx context.Context, machine, id string) error {
	if far, err := s.remote(machine); err != nil {
		return err
	} else if !far {
		return s.Remove(ctx, id)
	}
	if _, err := s.ask(ctx, machine, Request{Op: OpRemove, ID: id}); err != nil {
		return err
	}
	s.recordAt(ctx, machine, id, "removed", nil)
	return nil
}

// TestAt says which of machine's rules would answer a call. A machine that
// is not a hub has only its own rules: there machine names the call's
// machine (the `machine` a rule may match), as it always did.
func (s *Set) TestAt(ctx context.Context, machine string, p Probe) (Answer, error) {
	far, err := s.remote(machine)
	if err != nil || !far {
		if p.Machine == "" {
			p.Machine = machine
		}
		return s.Test(p)
	}
	rep, err := s.ask(ctx, machine, Request{Op: OpTest, Probe: &p})
	if err != nil {
		return Answer{}, err
	}
	if rep.Test == nil {
		return Answer{}, fmt.Errorf("machine %s answered a test with no answer", machine)
	}
	return *rep.Test, nil
}
