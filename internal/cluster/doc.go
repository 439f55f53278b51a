// Package cluster links several parley daemons over an embedded NATS server
// with JetStream: one hub runs the server, nodes dial out to it with an nkey
// and a pinned CA, and NATS itself confines each node to its own subjects.
//
// What lives here: the hub's certificate authority and TLS, the embedded
// server and its authorization, one-time join tokens, the node's link
// (dial out, heartbeat into the directory), and the admin requests behind
// `parley nodes`. Threads stay on their node; nothing here moves a thread.
//
// Subjects (docs/multi-machine.md explains them; <node> is a node name):
//
//	parley.from.<node>.>                  the node publishes (live events: parley.from.<node>.t.<thread>.ev)
//	parley.to.<node>.>                    the node subscribes (replay requests: parley.to.<node>.t.<thread>.replay)
//	parley.in.<node>.<thread>             inputs for the node: stream PARLEY_IN_<node>, work queue, consumer "node"
//	$KV.parley_nodes.<node>               the node's directory record (heartbeat)
//	$KV.parley_threads.<node>.<thread>    the node's thread summaries (reserved for the route follower)
//	parley.join                           a joining node's registration (the join user only)
//	parley.admin.>                        the hub's own requests (nodes, revoke); the admin user only
//
// Lock order: Hub.mu alone (it guards the registry and the server's users;
// no other lock is taken while it is held, except those inside nats-server).
package cluster
