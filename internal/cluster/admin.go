package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Admin is `parley nodes` talking to the running hub over its own listener,
// as the hub's admin user (the seed in the hub's data directory).
type Admin struct{ nc *nats.Conn }

// DialAdmin connects to the hub whose data directory is dataDir.
func DialAdmin(dataDir string) (*Admin, error) {
	dir := Dir(dataDir)
	addr, err := os.ReadFile(filepath.Join(dir, addrFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cluster: %s is not a hub's data directory (no hub has run there: `parley serve --cluster-listen ADDR`)", dataDir)
	}
	if err != nil {
		return nil, err
	}
	auth, err := nats.NkeyOptionFromSeed(filepath.Join(dir, adminSeed))
	if err != nil {
		return nil, fmt.Errorf("cluster: the hub's admin key: %w", err)
	}
	tlsConf, err := caTLS(filepath.Join(dir, caCertFile))
	if err != nil {
		return nil, err
	}
	a := dialable(strings.TrimSpace(string(addr)))
	nc, err := nats.Connect("tls://"+a, auth, nats.Secure(tlsConf), nats.Name("parley nodes"), nats.CustomInboxPrefix(adminInbox),
		nats.NoReconnect(), nats.Timeout(5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("cluster: the hub at %s is not answering (is `parley serve` running with a cluster listener?): %w", a, err)
	}
	return &Admin{nc: nc}, nil
}

// Close closes the connection.
func (a *Admin) Close() { a.nc.Close() }

// Nodes lists the joined nodes.
func (a *Admin) Nodes(ctx context.Context) ([]NodeStatus, error) {
	var ans struct {
		Result []NodeStatus `json:"result"`
		Error  string       `json:"error"`
	}
	if err := request(ctx, a.nc, adminNodes, nil, &ans); err != nil {
		return nil, err
	}
	if ans.Error != "" {
		return nil, errors.New(ans.Error)
	}
	return ans.Result, nil
}

// Revoke cuts a node off: its user is removed and its connections closed
// before this returns.
func (a *Admin) Revoke(ctx context.Context, node string) error {
	b, _ := json.Marshal(revokeRequest{Node: node})
	var ans answer
	if err := request(ctx, a.nc, adminRevoke, b, &ans); err != nil {
		return err
	}
	if ans.Error != "" {
		return errors.New(ans.Error)
	}
	return nil
}
