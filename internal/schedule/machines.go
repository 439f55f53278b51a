package schedule

import (
	"context"
	"encoding/json"
	"errors"
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
// at the hub: the hub keeps nothing of a node's schedules.

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
	Error     string     `json:"error,omitempty"`
	Code      string     `json:"code,omitempty"` // chat.CodeBadInput, chat.CodeNotFound, chat.CodeForbidden, or "" for others
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
		ans.Schedules, err = r.serve(ctx, req)
	}
	if err != nil {
		ans = Answer{Error: err.Error()}
		switch {
		case errors.Is(err, chat.ErrNotFound):
			ans.Code = chat.CodeNotFound
		case errors.Is(err, chat.ErrOutsideRoot):
			ans.Code = chat.CodeForbidden
		case errors.Is(err, chat.ErrBadInput), errors.Is(err, chat.ErrUnknownAgent):
			ans.Code = chat.CodeBadInput
		}
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

func (r *Runner) serve(ctx context.Context, req Request) ([]Schedule, error) {
	one := func(s Schedule, err error) ([]Schedule, error) {
		if err != nil {
			return nil, err
		}
		return []Schedule{s}, nil
	}
	switch req.Op {
	case OpList:
		return r.List(ctx)
	case OpAdd:
		if req.Spec == nil {
			return nil, chat.BadInput("an add names no schedule")
		}
		sp := *req.Spec
		sp.Machine = "" // this machine's
		return one(r.Add(ctx, sp))
	case OpPause, OpResume:
		return one(r.SetPaused(ctx, req.ID, req.Op == OpPause))
	case OpRemove:
		return nil, r.Remove(ctx, req.ID)
	}
	return nil, chat.BadInput("unknown schedules operation %q", req.Op)
}

// ask sends req to machine and reads its answer as this machine's errors.
func (r *Runner) ask(ctx context.Context, machine string, req Request) ([]Schedule, error) {
	b, _ := json.Marshal(req)
	out, err := r.opt.Remote.Ask(ctx, machine, b)
	if errors.Is(err, context.DeadlineExceeded) && req.Op != OpList {
		return nil, fmt.Errorf("machine %s did not answer in time: the change may or may not have been made there (list the schedules to see): %w",
			machine, chat.ErrAway)
	}
	if err != nil {
		return nil, err
	}
	var ans Answer
	if err := json.Unmarshal(out, &ans); err != nil {
		return nil, fmt.Errorf("machine %s answered something that is not a schedules answer", machine)
	}
	if ans.Error != "" {
		msg := "machine " + machine + ": " + ans.Error
		switch ans.Code {
		case chat.CodeNotFound:
			return nil, fmt.Errorf("%s: %w", msg, chat.ErrNotFound)
		case chat.CodeBadInput:
			return nil, chat.BadInput("%s", msg)
		case chat.CodeForbidden:
			return nil, fmt.Errorf("%s: %w", msg, chat.ErrOutsideRoot)
		}
		return nil, errors.New(msg)
	}
	for i := range ans.Schedules {
		r.named(machine, &ans.Schedules[i])
	}
	return ans.Schedules, nil
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

// addAt adds sp where its Machine says: here, or on that node.
func (r *Runner) addAt(ctx context.Context, sp Spec) (Schedule, error) {
	machine := sp.Machine
	if r.opt.Remote != nil && sp.Thread != "" {
		if m, local, ok := r.opt.Remote.SplitThread(sp.Thread); ok {
			switch {
			case machine == "":
				machine = m
			case machine != m:
				return Schedule{}, chat.BadInput("thread %s is on machine %s, not %s", sp.Thread, m, machine)
			}
			sp.Thread = local
		} else if machine != "" && machine != r.opt.Machine {
			return Schedule{}, chat.BadInput("thread %s is on this machine, not %s", sp.Thread, machine)
		}
	}
	sp.Machine = ""
	if machine == "" || machine == r.opt.Machine {
		s, err := r.Add(ctx, sp)
		s.Node = r.opt.Machine
		return s, err
	}
	if r.opt.Remote == nil {
		return Schedule{}, chat.BadInput("machine %q: this machine is not a cluster's hub; add the schedule on that machine", machine)
	}
	ss, err := r.ask(ctx, machine, Request{Op: OpAdd, Spec: &sp})
	if err != nil {
		return Schedule{}, err
	}
	if len(ss) != 1 {
		return Schedule{}, fmt.Errorf("machine %s answered %d schedules to an add", machine, len(ss))
	}
	return ss[0], nil
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
	ss, err := r.ask(ctx, machine, Request{Op: op, ID: local})
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
	_, err = r.ask(ctx, machine, Request{Op: OpRemove, ID: local})
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
			ss, err := r.ask(ctx, m, Request{Op: OpList})
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
