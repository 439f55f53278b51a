package cluster

import (
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/parleyhq/parley/internal/chat"
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
// summaries go to the hub as plain messages, hub_records.go; its inputs come as
// the hub's requests, hub_inputs.go), the whole JetStream API, the admin requests.
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

// EventSubject is where node publishes thread's live events.
func EventSubject(node string, thread chat.ThreadID) string {
	return FromSubject(node) + ".t." + string(thread) + ".ev"
}

func sourceSubject(node string) string { return ToSubject(node) + ".src" }

// sessionsSubject is where the hub asks node for its agents' own sessions
// (a sessions.Filter; answered with a sessionsAnswer).
func sessionsSubject(node string) string { return ToSubject(node) + ".sessions" }

// changesSubject is where the hub asks node for a thread's change (a
// changesRequest; answered with a changesAnswer: hub_changes.go).
func changesSubject(node string) string { return ToSubject(node) + ".changes" }

// shipSubject, filesSubject and terminalSubject are where the hub asks node
// to commit, push or open a pull request, to read a thread's files, and to
// read or type into its terminal (hub_work.go; answered with a nodeAnswer).
func shipSubject(node string) string     { return ToSubject(node) + ".ship" }
func filesSubject(node string) string    { return ToSubject(node) + ".files" }
func terminalSubject(node string) string { return ToSubject(node) + ".term" }

// ThreadKey is the thread-summary key of node's thread in parley_threads.
func ThreadKey(node string, thread chat.ThreadID) string { return node + "." + string(thread) }

// A node's directory record and thread summaries reach the hub as plain
// requests on its own parley.from.<node>.dir and parley.from.<node>.threads.>;
// the hub checks them and writes the KV entries itself, keyed by the node
// named in the SUBJECT (which NATS lets only that node publish). A node may
// publish to no $KV key nor any subject a stream captures: a KV write lets a
// header (Nats-Rollup) wipe other nodes' keys, and any JetStream publish
// sends its ack to a reply subject the publisher picks.
const (
	dirToken     = "dir"
	threadsToken = "threads"
	sumToken     = "sum"
	goneToken    = "gone"
	allToken     = "all"
	// maxRecord is the most a record or summary may weigh (the buckets' MaxValueSize).
	maxRecord = 64 << 10
	// maxThreadList is the most a node's list of its threads may weigh
	// (about 100,000 ids): the hub writes nothing of it, only purges.
	maxThreadList = 4 << 20
)

func dirSubject(node string) string { return FromSubject(node) + "." + dirToken }

// threadsSubject is the root of all a node says of its threads: one
// subscription at the hub takes them all, in the order the node sent them.
func threadsSubject(node string) string { return FromSubject(node) + "." + threadsToken }

func sumSubject(node string, thread string) string {
	return threadsSubject(node) + "." + sumToken + "." + thread
}

// goneSubject is where node says its thread was deleted.
func goneSubject(node, thread string) string {
	return threadsSubject(node) + "." + goneToken + "." + thread
}

// threadListSubject is where node names all its threads, after a link-up's summaries.
func threadListSubject(node string) string { return threadsSubject(node) + "." + allToken }

// inputSubject is where the hub hands node its inputs.
func inputSubject(node string) string { return ToSubject(node) + ".in" }
