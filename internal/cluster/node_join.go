package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Join registers this machine with the hub a token names: it makes the
// node's nkey, sends the public half over TLS pinned to the token's CA, and
// on success keeps the seed (0600) and the hub's CA in <data>/cluster.
// node is the name to join as ("" takes the token's).
func Join(ctx context.Context, dataDir, token, node, version string) (Claims, error) {
	c, _, _, err := ParseToken(token)
	if err != nil {
		return Claims{}, err
	}
	if c.Node != "" && node != "" && node != c.Node {
		return Claims{}, fmt.Errorf("this join token is for node %q, not %q", c.Node, node)
	}
	if c.Node != "" {
		node = c.Node
	}
	if err := CheckName(node); err != nil {
		return Claims{}, err
	}
	c.Node = node
	kp, err := nkeys.CreateUser()
	if err != nil {
		return Claims{}, err
	}
	pub, _ := kp.PublicKey()
	seal, err := nkeys.CreateCurveKeys()
	if err != nil {
		return Claims{}, err
	}
	sealPub, _ := seal.PublicKey()
	var caDER []byte
	nc, err := nats.Connect("tls://"+c.Hub, nats.Secure(pinnedTLS(c.CA, func(der []byte) { caDER = der })),
		nats.UserInfo(joinUser, c.Pass), nats.CustomInboxPrefix(joinInbox),
		nats.Name("parley join "+node), nats.NoReconnect(), nats.Timeout(10*time.Second))
	if err != nil {
		return Claims{}, fmt.Errorf("cluster: reach the hub at %s: %w", c.Hub, err)
	}
	defer nc.Close()
	req, _ := json.Marshal(joinRequest{Token: token, Node: node, Key: pub, Version: version, Protocol: thisProtocol, Seal: sealPub})
	var ans answer
	if err := request(ctx, nc, joinSubject, req, &ans); err != nil {
		return Claims{}, err
	}
	if ans, err = openAnswer(seal, ans); err != nil {
		return Claims{}, err
	}
	if ans.Error != "" {
		return Claims{}, fmt.Errorf("the hub refused to join: %s", ans.Error)
	}
	if caDER == nil {
		return Claims{}, errors.New("cluster: the hub's CA was not seen") // pinnedTLS ran, so this cannot be
	}
	dir := Dir(dataDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Claims{}, err
	}
	seed, _ := kp.Seed()
	if err := writeFile(filepath.Join(dir, nodeSeed), append(seed, '\n'), 0o600); err != nil {
		return Claims{}, err
	}
	if err := writeFile(filepath.Join(dir, hubCAFile), pemCert(caDER), 0o644); err != nil {
		return Claims{}, err
	}
	return c, nil
}

// Every join token carries the same join user's password, and NATS gives all
// connections of one user the same rights: whoever holds any token, used or
// expired, may subscribe to every joiner's reply inbox (_JOIN_INBOX.>). So
// each joiner's answer is its own by sealing, not by subject: the joiner
// sends a curve key made for this join, and the hub seals its answer to it
// (nkeys xkeys: X25519, XSalsa20-Poly1305) with a key of its own made for
// that answer. Only the hub publishes on _JOIN_INBOX.>, so what comes there
// is the hub's.

// openAnswer opens a sealed join answer; one in clear is a hub's before sealing.
func openAnswer(seal nkeys.KeyPair, ans answer) (answer, error) {
	if ans.Sealed == nil {
		return ans, nil
	}
	b, err := seal.Open(ans.Sealed, ans.From)
	if err != nil {
		return answer{}, fmt.Errorf("cluster: the hub's answer to the join does not open: %w", err)
	}
	var open answer
	if err := json.Unmarshal(b, &open); err != nil {
		return answer{}, fmt.Errorf("cluster: the hub's answer to the join: %w", err)
	}
	return open, nil
}

// request sends a request and decodes the answer's JSON into v.
func request(ctx context.Context, nc *nats.Conn, subj string, data []byte, v any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	m, err := nc.RequestWithContext(ctx, subj, data)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return fmt.Errorf("cluster: nothing at the hub answers %s (is it a parley hub?)", subj)
		}
		return fmt.Errorf("cluster: %s: %w", subj, err)
	}
	return json.Unmarshal(m.Data, v)
}

func nkeysFromSeed(seed []byte) (nkeys.KeyPair, error) { return nkeys.ParseDecoratedNKey(seed) }
