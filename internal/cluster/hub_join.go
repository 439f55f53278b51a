package cluster

import (
	"github.com/parleyhq/parley/internal/audit"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// The hub's end of a join (node_join.go is the joiner's): the request
// checked, the node registered, the answer sealed to the joiner.

// answerJoin handles a join request, its answer sealed to the joiner's key.
// A joiner that sent none (a parley before sealing) is answered in clear.
func (h *Hub) answerJoin(ctx context.Context, data []byte) answer {
	ans := plain(h.handleJoin)(ctx, data)
	var req joinRequest
	if json.Unmarshal(data, &req) != nil || req.Seal == "" {
		return ans
	}
	sealed, err := sealAnswer(ans, req.Seal)
	if err != nil {
		return answer{Error: "the join request's seal key: " + err.Error()}
	}
	return sealed
}

func sealAnswer(ans answer, to string) (answer, error) {
	if !nkeys.IsValidPublicCurveKey(to) {
		return answer{}, errors.New("not an nkeys curve public key")
	}
	kp, err := nkeys.CreateCurveKeys()
	if err != nil {
		return answer{}, err
	}
	defer kp.Wipe()
	b, err := json.Marshal(ans)
	if err != nil {
		return answer{}, err
	}
	from, _ := kp.PublicKey()
	sealed, err := kp.Seal(b, to)
	if err != nil {
		return answer{}, err
	}
	return answer{Sealed: sealed, From: from}, nil
}

func (h *Hub) handleJoin(ctx context.Context, data []byte) (any, error) {
	var req joinRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, errors.New("a join request must be JSON")
	}
	c, err := verifyToken(h.key, req.Token, time.Now())
	if err != nil {
		h.log.Warn("cluster: join refused", "node", req.Node, "err", err)
		return nil, err
	}
	if c.Node != "" && req.Node != c.Node {
		return nil, fmt.Errorf("this join token is for node %q, not %q", c.Node, req.Node)
	}
	if err := CheckName(req.Node); err != nil {
		return nil, err
	}
	if h.opt.Self != "" && req.Node == h.opt.Self {
		return nil, fmt.Errorf("%q is the hub's own machine name; join under another with `parley join --node NAME`", req.Node)
	}
	if !nkeys.IsValidPublicUserKey(req.Key) {
		return nil, errors.New("the node's key is not an nkey user public key")
	}
	if err := checkProtocol(req.Node, thisProtocol, protocolOf(req.Protocol), h.opt.Version, req.Version); err != nil {
		h.log.Warn("cluster: join refused", "node", req.Node, "err", err)
		return nil, err
	}
	h.members.Lock()
	defer h.members.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.reg.find(req.Node); ok {
		return nil, fmt.Errorf("a node named %q has already joined; on the hub, `parley nodes revoke %s` first", req.Node, req.Node)
	}
	if m, ok := h.reg.withKey(req.Key); ok {
		return nil, fmt.Errorf("this key already belongs to node %q", m.Name)
	}
	// Used exactly once: the create fails for a second use, however close.
	if _, err := h.used.Create(ctx, c.ID, []byte(req.Node)); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			h.log.Warn("cluster: join refused", "node", req.Node, "err", ErrTokenUsed)
			return nil, ErrTokenUsed
		}
		return nil, fmt.Errorf("record the token's use: %w", err)
	}
	if err := h.ensureInputs(ctx, req.Node, false); err != nil {
		return nil, err
	}
	next := h.reg.with(member{Name: req.Node, Key: req.Key, Joined: time.Now().UTC()})
	if err := h.apply(next); err != nil {
		return nil, err
	}
	h.startForwarder(req.Node)
	h.log.Info("cluster: node joined", "node", req.Node, "version", req.Version)
	h.record(ctx, audit.KindMachineJoin, req.Node, audit.ActorMachine+req.Node, "machine "+req.Node+" joined",
		map[string]string{"machine": req.Node, "version": req.Version})
	return map[string]string{"node": req.Node}, nil
}
