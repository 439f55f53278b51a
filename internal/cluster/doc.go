// Package cluster links several parley daemons over an embedded NATS server
// with JetStream: one hub runs the server, nodes dial out to it with an nkey
// and a pinned CA, and NATS itself confines each node to its own subjects.
//
// What lives here: the hub's certificate authority and TLS, the embedded
// server and its authorization, one-time join tokens, the node's link
// (dial out, heartbeat into the directory), the admin requests behind
// `parley nodes`, the inputs the hub hands a node (inputs.go), the node's
// side of its threads (node.go: live events, summaries, source answers) and
// the hub's (remote.go, view.go: the remote follow.Source, the relay, the
// readers' store; copy.go: the hub's bounded copy of each node's recent
// events, read while the node is away). Threads stay on their node; nothing
// here moves a thread.
//
// Subjects (docs/multi-machine.md explains them; <node> is a node name):
//
//	parley.from.<node>.>                  the node publishes (live events: parley.from.<node>.t.<thread>.ev)
//	parley.to.<node>.>                    the node subscribes: parley.to.<node>.in (inputs, as the hub's requests),
//	                                      parley.to.<node>.src (source requests: a thread, events, tail, cards, usage)
//	                                      parley.to.<node>.sessions (the agents' own sessions there: sessions.go)
//	parley.copy.<node>.<thread>           the hub's copy of the node's events: stream PARLEY_COPY_<node>, written by the hub only
//	parley.in.<node>.<thread>             inputs for the node: stream PARLEY_IN_<node>, work queue, read by the hub's consumer "node"
//	parley.from.<node>.dir                the node's directory record (heartbeat), a request to the hub
//	parley.from.<node>.threads.>          what the node says of its threads, requests to the hub taken in order:
//	                                      sum.<thread> (a summary), gone.<thread> (deleted), all (the ids it has)
//	$KV.parley_nodes.<node>               the directory record, written by the hub only (records.go)
//	$KV.parley_threads.<node>.<thread>    the thread summaries, written by the hub only
//	parley.join                           a joining node's registration (the join user only)
//	parley.admin.>                        the hub's own requests (nodes, revoke); the admin user only
//	_JOIN_INBOX.>                         answers to joins, each sealed to its joiner (join.go)
//	$SYS.ACCOUNT.$G.CONNECT               the server's connect advisories: the hub keeps one connection per node key (conns.go)
//
// Lock order: docs/locks.md (Hub.members, then hubCopy.mu, then Hub.mu,
// then a forwarder's mu; the rest are leaves).
package cluster
