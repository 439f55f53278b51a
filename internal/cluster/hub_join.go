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
	// members keeps the membership as checked here until the join is made;
	// mu is taken only to read and change it, never across JetStream's
	// answers (every sender takes it).
	h.members.Lock()
	defer h.members.Unlock()
	if err := h.joinable(req.Node, req.Key); err != nil {
		return nil, err
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
	h.mu.Lock()
	err = h.apply(h.reg.with(member{Name: req.Node, Key: req.Key, Joined: time.Now().UTC()}))
	if err == nil {
		h.startForwarder(req.Node)
	}
	h.mu.Unlock()
	if err != nil {
		return nil, err
	}
	h.log.Info("cluster: node joined", "node", req.Node, "version", req.Version)
	h.record(ctx, audit.KindMachineJoin, req.Node, audit.ActorMachine+req.Node, "machine "+req.Node+" joined",
		map[string]string{"machine": req.Node, "version": req.Version})
	return map[string]string{"node": req.Node}, nil
}

// joinable says why node (with public key key) cannot join as things are,
// or nil.
func (h *Hub) joinable(node, key string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.reg.find(node); ok {
		return fmt.Errorf("a node named %q has already joined; on the hub, `parley nodes revoke %s` first", node, node)
	}
	if m, ok := h.reg.withKey(key); ok {
		return fmt.Errorf("this key already belongs to node %q", m.Name)
	}
	return nil
}
