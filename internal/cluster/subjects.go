package cluster

import (
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Names on the wire (doc.go lists them with what they carry).
const (
	nodesBucket   = "parley_nodes"
	threadsBucket = "parley_threads"
	usedBucket    = "parley_join_used"

	joinSubject   = "parley.join"
	adminNodes    = "parley.admin.nodes"
	adminRevoke   = "parley.admin.revoke"
	joinUser      = "join"
	inputConsumer = "node"
)

// FromSubject is the prefix of what node publishes: parley.from.<node>.
func FromSubject(node string) string { return "parley.from." + node }

// ToSubject is the prefix of what node receives: parley.to.<node>.
func ToSubject(node string) string { return "parley.to." + node }

// InputSubject is the prefix of node's input stream: parley.in.<node>.
func InputSubject(node string) string { return "parley.in." + node }

// InputStream is the name of node's input stream.
func InputStream(node string) string { return "PARLEY_IN_" + node }

// DirectoryKey is the subject a write of node's directory record goes to.
func DirectoryKey(node string) string { return "$KV." + nodesBucket + "." + node }

// Reply inboxes. A node's is _INBOX.<node>; the hub's own connections and
// joining nodes use prefixes outside _INBOX., so no node name can match them.
const (
	hubInbox   = "_HUB_INBOX"
	adminInbox = "_ADMIN_INBOX"
	joinInbox  = "_JOIN_INBOX"
)

func inboxPrefix(node string) string { return "_INBOX." + node }

// nodePermissions are all a node's user may do. Everything else, NATS refuses:
// another node's subjects, every $KV key and stream subject (its record and
// summaries go to the hub as plain messages, records.go; its inputs come as
// the hub's requests, inputs.go), the whole JetStream API, the admin requests.
// No stream may capture parley.from.>: a JetStream publish acks to a reply
// subject the node picks.
func nodePermissions(node string) *server.Permissions {
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{
			FromSubject(node) + ".>",
		}},
		Subscribe: &server.SubjectPermission{Allow: []string{
			ToSubject(node) + ".>",
			inboxPrefix(node) + ".>",
		}},
		// Answers to the requests it receives (inputs, replay), to their reply subjects only.
		Response: &server.ResponsePermission{MaxMsgs: -1, Expires: 2 * time.Minute},
	}
}

// joinPermissions let a joining node send its registration and read the answer.
func joinPermissions() *server.Permissions {
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: []string{joinSubject}},
		Subscribe: &server.SubjectPermission{Allow: []string{joinInbox + ".>"}},
	}
}
