package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Cluster is the [cluster] table: several machines, one parley
// (docs/multi-machine.md). A machine is the hub (listen set), a node (hub set,
// written by `parley join`), or neither: then nothing of it runs.
type Cluster struct {
	// Listen is the hub's NATS listener (host:port); "" is not a hub.
	Listen string `toml:"listen"`
	// Advertise is the address join tokens tell nodes to dial; "" takes Listen.
	Advertise string `toml:"advertise"`
	// Hub is the hub a node dials out to (host:port); "" is not a node.
	Hub string `toml:"hub"`
	// Node is this machine's name in the cluster (default: the host name).
	Node string `toml:"node"`
	// Heartbeat is how often a node writes its directory record; the hub
	// counts it offline after three missed.
	Heartbeat Duration `toml:"heartbeat"`
	// InputWait is how long the hub keeps an input for a node that does not
	// take it (away, or its link down) before the input fails with a reason.
	InputWait Duration `toml:"input_wait"`
	// InputBytes is the most each node's waiting inputs may weigh at the
	// hub. JetStream reserves it on the hub's disk per node (counted
	// against the disk free at the hub's start), so it bounds how many
	// nodes a hub can take.
	InputBytes int64 `toml:"input_bytes"`
	// StoreBytes is the most the hub's JetStream reserves on its disk (its
	// streams' bounds: the thread summaries' 256 MiB and each node's
	// input_bytes and copy_bytes); 0 is JetStream's default, the disk free at the hub's start.
	StoreBytes int64 `toml:"store_bytes"`
	// CopyBytes is the most the hub's copy of each node's recent events may
	// weigh (its oldest go first); booked on the hub's disk per node, as
	// input_bytes is. While a node is away its threads are read from it.
	CopyBytes int64 `toml:"copy_bytes"`
	// CopyAge is how long the hub keeps an event in that copy.
	CopyAge Duration `toml:"copy_age"`
}

// DefaultClusterHeartbeat is [cluster] heartbeat's default.
const DefaultClusterHeartbeat = 5 * time.Second

// ClusterHeartbeatRange is [cluster] heartbeat's range.
var ClusterHeartbeatRange = DurationRange{Min: 100 * time.Millisecond, Max: 5 * time.Minute}

// DefaultClusterInputWait is [cluster] input_wait's default.
const DefaultClusterInputWait = 24 * time.Hour

// ClusterInputWaitRange is [cluster] input_wait's range (JetStream
// de-duplicates an input's id for 10 minutes; inputs wait at least that).
var ClusterInputWaitRange = DurationRange{Min: 10 * time.Minute, Max: 30 * 24 * time.Hour}

// DefaultClusterInputBytes is [cluster] input_bytes' default.
const DefaultClusterInputBytes = 64 << 20

// ClusterInputBytesRange is [cluster] input_bytes' range: at least two of
// the largest inputs NATS carries (8 MiB each), at most 4 GiB.
var ClusterInputBytesRange = ByteRange{Min: 16 << 20, Max: 4 << 30}

// ClusterStoreBytesRange is [cluster] store_bytes' range when set (0 is the
// disk free at the hub's start): at least the summaries' 256 MiB and one
// node's inputs.
var ClusterStoreBytesRange = ByteRange{Min: 512 << 20, Max: 1 << 50}

// DefaultClusterCopyBytes is [cluster] copy_bytes' default.
const DefaultClusterCopyBytes = 32 << 20

// ClusterCopyBytesRange is [cluster] copy_bytes' range: at least two of the
// largest events NATS carries (8 MiB each), at most 4 GiB.
var ClusterCopyBytesRange = ByteRange{Min: 16 << 20, Max: 4 << 30}

// DefaultClusterCopyAge is [cluster] copy_age's default.
const DefaultClusterCopyAge = 7 * 24 * time.Hour

// ClusterCopyAgeRange is [cluster] copy_age's range.
var ClusterCopyAgeRange = DurationRange{Min: time.Hour, Max: 365 * 24 * time.Hour}

// NodeNamePattern is what a node name may be: one NATS subject token, usable
// in a stream name.
var NodeNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// CheckNodeName says why a node name cannot be used, or nil.
func CheckNodeName(name string) error {
	if !NodeNamePattern.MatchString(name) {
		return fmt.Errorf("node name %q: want 1 to 63 lowercase letters, digits, '-' or '_', starting with a letter or digit", name)
	}
	return nil
}

// Enabled says whether this machine takes part in a cluster.
func (c Cluster) Enabled() bool { return c.Listen != "" || c.Hub != "" }

// DefaultNodeName is the host name made into a node name: lowercase, its
// first label, other characters as '-'; "node" when nothing is left.
func DefaultNodeName() string {
	h, _ := os.Hostname()
	h, _, _ = strings.Cut(strings.ToLower(h), ".")
	b := []byte(h)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '-'
		}
	}
	name := strings.TrimLeft(string(b), "-_")
	if len(name) > 63 {
		name = name[:63]
	}
	if name == "" {
		return "node"
	}
	return name
}

// check validates [cluster] and fills the node name.
func (c *Cluster) check() []error {
	var errs []error
	if c.Listen != "" && c.Hub != "" {
		errs = append(errs, errors.New("cluster: listen and hub are both set: a machine is the hub or a node, not both"))
	}
	if c.Listen != "" {
		if err := checkHostPort("cluster.listen", c.Listen, true); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Advertise != "" {
		if c.Listen == "" {
			errs = append(errs, errors.New("cluster.advertise is set without cluster.listen (it is the hub's address)"))
		} else if err := checkHostPort("cluster.advertise", c.Advertise, false); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Hub != "" {
		if err := checkHostPort("cluster.hub", c.Hub, false); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Node == "" {
		c.Node = DefaultNodeName()
	} else if err := CheckNodeName(c.Node); err != nil {
		errs = append(errs, fmt.Errorf("cluster.node: %w", err))
	}
	if err := ClusterHeartbeatRange.check("cluster.heartbeat", c.Heartbeat.Duration); err != nil {
		errs = append(errs, err)
	}
	if err := ClusterInputWaitRange.check("cluster.input_wait", c.InputWait.Duration); err != nil {
		errs = append(errs, err)
	}
	if err := ClusterInputBytesRange.check("cluster.input_bytes", c.InputBytes); err != nil {
		errs = append(errs, err)
	}
	if err := ClusterCopyBytesRange.check("cluster.copy_bytes", c.CopyBytes); err != nil {
		errs = append(errs, err)
	}
	if err := ClusterCopyAgeRange.check("cluster.copy_age", c.CopyAge.Duration); err != nil {
		errs = append(errs, err)
	}
	if c.StoreBytes != 0 {
		if err := ClusterStoreBytesRange.check("cluster.store_bytes", c.StoreBytes); err != nil {
			errs = append(errs, fmt.Errorf("%w (or 0: the disk free at the hub's start)", err))
		}
	}
	return errs
}

// checkHostPort wants host:port; port 0 (any free port) only when anyPort.
func checkHostPort(key, addr string, anyPort bool) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: want host:port (e.g. 0.0.0.0:7431): %v", key, addr, err)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 && !anyPort {
		lo := "1"
		if anyPort {
			lo = "0"
		}
		return fmt.Errorf("%s %q: the port %q is out of range: want %s to 65535", key, addr, port, lo)
	}
	return nil
}

// WriteClusterNode records a joined hub and node name in the config file at
// path (made if missing): a [cluster] table is appended, or the keys are put
// at the top of an existing one. A file already naming this hub and node (a
// node joining again after a revoke) is left as it is; one naming another
// hub is refused.
func WriteClusterNode(path, hub, node string) error {
	data, err := readFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var cur struct {
		Cluster *struct {
			Hub  string `toml:"hub"`
			Node string `toml:"node"`
		} `toml:"cluster"`
	}
	if _, err := toml.Decode(string(data), &cur); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	lines := fmt.Sprintf("hub = %q\nnode = %q\n", hub, node)
	text := string(data)
	switch {
	case cur.Cluster != nil && cur.Cluster.Hub == hub && cur.Cluster.Node == node:
		return nil
	case cur.Cluster != nil && cur.Cluster.Hub != "":
		return fmt.Errorf("config %s already joins hub %s: remove its [cluster] hub to join another", path, cur.Cluster.Hub)
	case cur.Cluster != nil && cur.Cluster.Node != "" && cur.Cluster.Node != node:
		return fmt.Errorf("config %s names this node %q, not %q", path, cur.Cluster.Node, node)
	case cur.Cluster != nil:
		if cur.Cluster.Node != "" {
			lines = fmt.Sprintf("hub = %q\n", hub)
		}
		loc := clusterHeader.FindStringIndex(text)
		if loc == nil {
			return fmt.Errorf("config %s: its cluster table is not a [cluster] header; add hub = %q there", path, hub)
		}
		text = text[:loc[1]] + "\n" + lines + text[loc[1]:]
	default:
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		if text != "" {
			text += "\n"
		}
		text += "# Written by `parley join`: this machine dials out to its hub.\n[cluster]\n" + lines
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	mode := os.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

var clusterHeader = regexp.MustCompile(`(?m)^[ \t]*\[cluster\][ \t]*(#[^\n]*)?$`)
