package cluster

import (
	"fmt"
	"strconv"
)

// The cluster protocol: what a hub and its nodes say to each other (the
// subjects, the records, the requests), numbered. A hub takes nodes of its
// own protocol and the one before, and a node takes a hub of its own and
// the one before: so a hub and a node link when their protocols are at most
// one apart, whichever was upgraded first, and an upgrade goes one machine
// at a time. A change to the wire bumps the number by one, at most once per
// minor release, and keeps understanding what the previous protocol says,
// on both sides, until the next bump.
//
// Not the parley version: a development build says "dev" or a commit, and
// two builds of the same code speak the same protocol whatever their
// version strings. Both are in the directory record and in the log.
//
// Protocol 1 is the one before numbers: a record, a join request or a hub's
// answer without a protocol is of protocol 1.

// protocol is this build's protocol number, in decimal. A string only so
// that a build can be made one protocol older or newer for a test
// (go build -ldflags "-X github.com/parleyhq/parley/internal/cluster.protocol=N").
var protocol = "2"

var thisProtocol = mustProtocol(protocol)

func mustProtocol(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		panic("cluster: the build's protocol " + strconv.Quote(s) + " is not a number from 1")
	}
	return n
}

// Protocol is this build's cluster protocol number.
func Protocol() int { return thisProtocol }

// hdrProtocol is the header a hub's answer to a node's record carries its
// protocol in.
const hdrProtocol = "Parley-Protocol"

// protocolOf reads a protocol as sent: absent (0) is protocol 1.
func protocolOf(n int) int { return max(n, 1) }

// compatible says whether a hub and a node of protocols a and b link.
func compatible(a, b int) bool { return a-b <= 1 && b-a <= 1 }

// ProtocolError is a link refused: the hub and a node speak protocols more
// than one apart. Both sides say the same.
type ProtocolError struct {
	Node                    string
	HubProto, NodeProto     int
	HubVersion, NodeVersion string // parley versions, when known
}

func (e *ProtocolError) Error() string {
	older := "node " + e.Node
	if e.HubProto < e.NodeProto {
		older = "the hub"
	}
	return fmt.Sprintf("the hub speaks cluster protocol %d%s and node %s %d%s: a hub and its nodes link only "+
		"when their protocols are at most one apart (a hub takes nodes of its own and the previous minor release, "+
		"and a node such a hub); upgrade %s",
		e.HubProto, versionNote(e.HubVersion), e.Node, e.NodeProto, versionNote(e.NodeVersion), older)
}

// checkProtocol is the one check both sides make.
func checkProtocol(node string, hub, nodeProto int, hubVersion, nodeVersion string) error {
	if compatible(hub, nodeProto) {
		return nil
	}
	return &ProtocolError{Node: node, HubProto: hub, NodeProto: nodeProto, HubVersion: hubVersion, NodeVersion: nodeVersion}
}

func versionNote(v string) string {
	if v == "" {
		return ""
	}
	return " (parley " + v + ")"
}
