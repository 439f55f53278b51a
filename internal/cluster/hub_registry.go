package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// member is one joined node as the hub's registry keeps it: its name and the
// public half of its nkey. The registry file (<data>/cluster/nodes.json, 0600)
// is the truth of who may connect; the server's users are made from it at
// every start and every change.
type member struct {
	Name   string    `json:"name"`
	Key    string    `json:"key"`
	Joined time.Time `json:"joined"`
}

type registry struct {
	Nodes []member `json:"nodes"`
	// Revoked is when each machine revoked and not joined since was
	// revoked: its threads at the hub say so, and how to join it again.
	Revoked map[string]time.Time `json:"revoked,omitempty"`
}

func loadRegistry(dir string) (registry, error) {
	data, err := os.ReadFile(filepath.Join(dir, registryFile))
	if errors.Is(err, os.ErrNotExist) {
		return registry{}, nil
	}
	if err != nil {
		return registry{}, fmt.Errorf("cluster: %w", err)
	}
	var r registry
	if err := json.Unmarshal(data, &r); err != nil {
		return registry{}, fmt.Errorf("cluster: %s: %w", filepath.Join(dir, registryFile), err)
	}
	return r, nil
}

func (r registry) save(dir string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, registryFile), append(data, '\n'), 0o600)
}

func (r registry) find(name string) (member, bool) {
	i := slices.IndexFunc(r.Nodes, func(m member) bool { return m.Name == name })
	if i < 0 {
		return member{}, false
	}
	return r.Nodes[i], true
}

func (r registry) withKey(key string) (member, bool) {
	i := slices.IndexFunc(r.Nodes, func(m member) bool { return m.Key == key })
	if i < 0 {
		return member{}, false
	}
	return r.Nodes[i], true
}

// with returns a copy with m added, sorted by name.
func (r registry) with(m member) registry {
	out := registry{Nodes: append(slices.Clone(r.Nodes), m), Revoked: maps.Clone(r.Revoked)}
	slices.SortFunc(out.Nodes, func(a, b member) int { return strings.Compare(a.Name, b.Name) })
	delete(out.Revoked, m.Name)
	return out
}

// without returns a copy without the node called name, revoked at.
func (r registry) without(name string, at time.Time) registry {
	out := registry{Nodes: slices.DeleteFunc(slices.Clone(r.Nodes), func(m member) bool { return m.Name == name }),
		Revoked: maps.Clone(r.Revoked)}
	if out.Revoked == nil {
		out.Revoked = map[string]time.Time{}
	}
	out.Revoked[name] = at.UTC()
	return out
}
