package schedule

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/chat"
)

// A cluster's schedules: each is kept and run by the machine whose agent
// runs it (its own SQLite, its own Runner), so a run never depends on the
// link. At the hub, `--machine M` (the API's "machine") adds one on node M,
// the list holds every machine's (each with its "node"), and pause, resume
// and remove reach the node that keeps it: each is one request to that
// node's Runner (Serve), answered there. A node's schedule is named at the
// hub as its own id + "@" + the node, as its threads are. A node that does
// not answer is an error saying so (chat.ErrAway), never a half-made change
// at the hub: the hub keeps nothing of a node's schedules. A node that may
// have had the request but whose answer did not come (too slow, the link
// cut) is chat.ErrUnanswered, saying what may have happened there and that the
// same request can be sent again: an add with its id (Spec.ID) is kept
// once, a pause, resume or remove done twice is done once.

// Remote is a cluster's other machines, as the hub reaches them.
type Remote interface {
	// Machines names the machines joined to this hub (online or not).
	Machines(ctx context.Context) ([]string, error)
	// Ask sends req to machine's Runner (its Serve) and returns its answer;
	// an error wrapping chat.ErrAway when the machine does not answer.
	Ask(ctx context.Context, machine string, req []byte) ([]byte, error)
	// ThreadID names machine's thread at the hub; SplitThread undoes it
	// (ok false for the hub's own thread).
	ThreadID(machine string, local chat.ThreadID) chat.ThreadID
	SplitThread(id chat.ThreadID) (machine string, local chat.ThreadID, ok bool)
}

// Request is what the hub asks a node's Runner.
type Request struct {
	Op   string `json:"op"` // list, add, pause, resume, rm
	ID   string `json:"id,omitempty"`
	Spec *Spec  `json:"spec,omitempty"`
}

// Request operations.
const (
	OpList   = "list"
	OpAdd    = "add"
	OpPause  = "pause"
	OpResume = "resume"
	OpRemove = "rm"
)

// Answer is a node's answer: its schedules (list: all; add, pause, resume:
// the one), or an error with its kind.
type Answer struct {
	Schedules []Schedule `json:"schedules,omitempty"`
	// Existed: the add's id names the schedule an earlier try of the same
	// add made; nothing changed.
	Existed bool   `json:"existed,omitempty"`
	Error   string `json:"error,omitempty"`
	Code    string `json:"code,omitempty"` // chat.CodeOf the error
}

// maxAnswer bounds a node's answer (under NATS's 1 MiB message): a list
// that would be larger has its texts shortened to listText characters.
const (
	maxAnswer = 900 << 10
	listText  = 200
)

// Serve answers one of the hub's requests with this machine's schedules.
func (r *Runner) Serve(ctx context.Context, b []byte) []byte {
	var req Request
	var ans Answer
	var err error
	if jerr := json.Unmarshal(b, &req); jerr != nil {
		err = chat.BadInput("a schedules request must be JSON")
	} else {
		ans.Schedules, ans.Existed, err = r.serve(ctx, req)
	}
	if err != nil {
		ans = Answer{Error: err.Error(), Code: chat.CodeOf(err)}
	}
	out, _ := json.Marshal(ans)
	if len(out) > maxAnswer {
		for i := range ans.Schedules {
			if t := ans.Schedules[i].Text; utf8.RuneCountInString(t) > listText {
				ans.Schedules[i].Text = string([]rune(t)[:listText-1]) + "…"
			}
		}
		out, _ = json.Marshal(ans)
	}
	return out
}

func (r *Runner) serve(ctx context.Context, req Request) (ss []Schedule, existed bool, err error) {
	one := func(s Schedule, err error) ([]Schedule, bool, error) {
		if err != nil {
			return nil, false, err
		}
		return []Schedule{s}, existed, nil
	}
	switch req.Op {
	case OpList:
		ss, err = r.List(ctx)
		return ss, false, err
	case OpAdd:
		if req.Spec == nil {
			return nil, false, chat.BadInput("an add names no schedule")
		}
		sp := *req.Spec
		sp.Machine = "" // this machine's
		var s Schedule
		s, existed, err = r.add(ctx, sp)
		return one(s, err)
	case OpPause, OpResume:
		return one(r.SetPaused(ctx, req.ID, req.Op == OpPause))
	case OpRemove:
		return nil, false, r.Remove(ctx, req.ID)
	}
	return nil, false, chat.BadInput("unknown schedules operation %q", req.Op)
}

// ask sends req to machine and reads its answer as this machine's errors;
// existed is an add's answer that the schedule was kept already.
func (r *Runner) ask(ctx context.Context, machine string, req Request) (ss []Schedule, existed bool, err error) {
	b, _ := json.Marshal(req)
	out, err := r.opt.Remote.Ask(ctx, machine, b)
	if err != nil && req.Op != OpList && !chat.NeverHad(err) {
		return nil, false, unansweredChange(machine, req, err)
	}
	if err != nil {
		return nil, false, err
	}
	var ans Answer
	if err := json.Unmarshal(out, &ans); err != nil {
		return nil, false, fmt.Errorf("machine %s answered something that is not a schedules answer", machine)
	}
	if ans.Error != "" {
		return nil, false, chat.ErrorOf(ans.Code, "machine "+machine+": "+ans.Error)
	}
	for i := range ans.Schedules {
		r.named(machine, &ans.Schedules[i])
	}
	return ans.Schedules, ans.Existed, nil
}

// unansweredChange says what may have happened on machine when req's
// answer did not come (err), and whether sending it again is safe.
func unansweredChange(machine string, req Request, err error) error {
	var done string
	switch {
	case req.Op == OpAdd && req.Spec != nil && req.Spec.ID != "":
		done = fmt.Sprintf("the schedule may have been made there; the same add (id %s) can be sent again safely: it is made once", req.Spec.ID)
	case req.Op == OpAdd:
		done = "the schedule may have been made there: list the schedules to see before adding it again (an add with an id can be sent again safely)"
	case req.Op == OpRemove:
		done = fmt.Sprintf("schedule %s may have been removed there; removing it again is safe (once removed, it answers not found)", req.ID)
	default:
		done = fmt.Sprintf("schedule %s may have been %sd there; doing it again is safe", req.ID, req.Op)
	}
	return chat.Unanswered(machine, err, done)
}

// named is machine's schedule as the hub names it and its threads.
func (r *Runner) named(machine string, s *Schedule) {
	s.ID, s.Node = s.ID+"@"+machine, machine
	if s.Thread != "" {
		s.Thread = r.opt.Remote.ThreadID(machine, s.Thread)
	}
	if s.LastThread != "" {
		s.LastThread = r.opt.Remote.ThreadID(machine, s.LastThread)
	}
}

// elsewhere says which machine keeps the schedule id names, and its id
// there; machine is "" for this machine's own.
func (r *Runner) elsewhere(id string) (machine, local string, err error) {
	local, machine, ok := strings.Cut(id, "@")
	if !ok || machine == r.opt.Machine {
		return "", local, nil
	}
	if r.opt.Remote == nil {
		return "", "", fmt.Errorf("schedule %s: %w (this machine is not a cluster's hub)", id, chat.ErrNotFound)
	}
	return machine, local, nil
}

// addAt adds sp where its Machine says: here, or on that node; existed is
// an add whose id names the schedule an earlier try of it made.
func (r *Runner) addAt(ctx context.Context, sp Spec) (s Schedule, existed bool, err error) {
	machine := sp.Machine
	if r.opt.Remote != nil && sp.Thread != "" {
		if m, local, ok := r.opt.Remote.SplitThread(sp.Thread); ok {
			switch {
			case machine == "":
				machine = m
			case machine != m:
				return Schedule{}, false, chat.BadInput("thread %s is on machine %s, not %s", sp.Thread, m, machine)
			}
			sp.Thread = local
		} else if machine != "" && machine != r.opt.Machine {
			return Schedule{}, false, chat.BadInput("thread %s is on this machine, not %s", sp.Thread, machine)
		}
	}
	sp.Machine = ""
	if machine == "" || machine == r.opt.Machine {
		s, existed, err = r.add(ctx, sp)
		s.Node = r.opt.Machine
		return s, existed, err
	}
	if r.opt.Remote == nil {
		return Schedule{}, false, chat.BadInput("machine %q: this machine is not a cluster's hub; add the schedule on that machine", machine)
	}
	if sp.ID != "" {
		if err := chat.CheckAddID("schedule", sp.ID); err != nil { // refused here too: an older node would ignore it
			return Schedule{}, false, err
		}
	}
	ss, existed, err := r.ask(ctx, machine, Request{Op: OpAdd, Spec: &sp})
	if err != nil {
		return Schedule{}, false, err
	}
	if len(ss) != 1 {
		return Schedule{}, false, fmt.Errorf("machine %s answered %d schedules to an add", machine, len(ss))
	}
	return ss[0], existed, nil
}

// pauseAt pauses or resumes the schedule id names, where it is kept.
func (r *Runner) pauseAt(ctx context.Context, id string, paused bool) (Schedule, error) {
	machine, local, err := r.elsewhere(id)
	if err != nil {
		return Schedule{}, err
	}
	if machine == "" {
		s, err := r.SetPaused(ctx, local, paused)
		s.Node = r.opt.Machine
		return s, err
	}
	op := OpResume
	if paused {
		op = OpPause
	}
	ss, _, err := r.ask(ctx, machine, Request{Op: op, ID: local})
	if err != nil {
		return Schedule{}, err
	}
	if len(ss) != 1 {
		return Schedule{}, fmt.Errorf("machine %s answered %d schedules", machine, len(ss))
	}
	return ss[0], nil
}

// removeAt removes the schedule id names, where it is kept.
func (r *Runner) removeAt(ctx context.Context, id string) error {
	machine, local, err := r.elsewhere(id)
	if err != nil {
		return err
	}
	if machine == "" {
		return r.Remove(ctx, local)
	}
	_, _, err = r.ask(ctx, machine, Request{Op: OpRemove, ID: local})
	return err
}

// Unlisted is a machine whose schedules a list at the hub could not read.
type Unlisted struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// listWait bounds how long a list at the hub waits for each node.
const listWait = 5 * time.Second

// listAll is this machine's schedules and, at a hub, every node's (asked
// at once); a node that does not answer is named in unlisted.
func (r *Runner) listAll(ctx context.Context) (all []Schedule, unlisted []Unlisted, err error) {
	all, err = r.List(ctx)
	if err != nil || r.opt.Remote == nil {
		return all, nil, err
	}
	for i := range all {
		all[i].Node = r.opt.Machine
	}
	machines, err := r.opt.Remote.Machines(ctx)
	if err != nil {
		return nil, nil, err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range machines {
		if m == r.opt.Machine {
			continue
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, listWait)
			defer cancel()
			ss, _, err := r.ask(ctx, m, Request{Op: OpList})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				unlisted = append(unlisted, Unlisted{Node: m, Reason: err.Error()})
				return
			}
			all = append(all, ss...)
		})
	}
	wg.Wait()
	slices.SortStableFunc(unlisted, func(a, b Unlisted) int { return strings.Compare(a.Node, b.Node) })
	sortSchedules(all)
	return all, unlisted, nil
}
