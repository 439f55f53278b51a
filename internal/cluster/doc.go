// Package cluster links several parley daemons over an embedded NATS server
// with JetStream: one hub runs the server, nodes dial out to it with an nkey
// and a pinned CA, and NATS itself confines each node to its own subjects.
//
// Files are named by the side they run on. hub_*.go is the hub's code: the
// embedded server and its users (hub.go, hub_registry.go, hub_conns.go),
// joins and revokes (hub_join.go, hub.go), the directory it writes from the
// nodes' records (hub_records.go, hub_mirror.go, hub_machines.go,
// hub_online.go), its end of the input protocol (hub_inputs.go: the stream,
// the forwarder that hands each input to its node, Request and Ask), the
// nodes' threads as the hub reads them (hub_source.go: the remote
// follow.Source; hub_relay.go: live events into the hub's fan-out;
// hub_copy.go: its bounded copy of each node's recent events, read while the
// node is away; hub_view.go: the readers' store) and its disk budget
// (hub_store.go). node_*.go is the node's: its link (node_link.go: dial out,
// heartbeat), its end of the input protocol (node_inputs.go: apply each once,
// answer after the commit), what it tells the hub of its threads
// (node_threads.go: live events; node_summaries.go, node_notices.go;
// node_source.go: answers to the hub's reads) and `parley join`
// (node_join.go). The rest is what both ends read: subjects.go, wire.go
// (the records that cross the link), inputs.go (the input protocol's
// answer, refusals and limits), directory.go, protocol.go, token.go, ca.go;
// admin.go is the client behind `parley nodes`. Threads stay on their node;
// nothing here moves a thread.
//
// One package, not cluster/hub and cluster/node: the two ends share the
// wire records (srcRequest, inputAnswer, wireThread…), subjects and
// limits, which sub-packages would have to export to each other, and the
// tests run a hub and its nodes together.
//
// Subjects (docs/multi-machine.md explains them; <node> is a node name):
//
//	parley.from.<node>.>                  the node publishes (live events: parley.from.<node>.t.<thread>.ev)
//	parley.to.<node>.>                    the node subscribes: parley.to.<node>.in (inputs, as the hub's requests),
//	                                      parley.to.<node>.src (source requests: a thread, events, tail, cards, usage)
//	                                      parley.to.<node>.sessions (the agents' own sessions there: node_sessions.go, hub_sessions.go)
//	parley.copy.<node>.<thread>           the hub's copy of the node's events: stream PARLEY_COPY_<node>, written by the hub only
//	parley.in.<node>.<thread>             inputs for the node: stream PARLEY_IN_<node>, work queue, read by the hub's consumer "node"
//	parley.from.<node>.dir                the node's directory record (heartbeat), a request to the hub
//	parley.from.<node>.threads.>          what the node says of its threads, requests to the hub taken in order:
//	                                      sum.<thread> (a summary), gone.<thread> (deleted), all (the ids it has)
//	$KV.parley_nodes.<node>               the directory record, written by the hub only (hub_records.go)
//	$KV.parley_threads.<node>.<thread>    the thread summaries, written by the hub only
//	parley.join                           a joining node's registration (the join user only)
//	parley.admin.>                        the hub's own requests (nodes, revoke); the admin user only
//	_JOIN_INBOX.>                         answers to joins, each sealed to its joiner (hub_join.go)
//	$SYS.ACCOUNT.$G.CONNECT               the server's connect advisories: the hub keeps one connection per node key (hub_conns.go)
//
// Lock order: docs/locks.md (Hub.members, then hubCopy.mu, then Hub.mu,
// then a forwarder's mu; the rest are leaves).
package cluster
