// Package remote is how a daemon's parts reach the threads of a cluster's
// other machines; internal/cluster carries the bytes, this package says what
// they mean to the router.
//
// On a node, Inputs applies what the hub hands it (node.go), in the input
// format both ends share (input.go, with the mapping of a router error to
// the node's answer: retried, or refused for good).
//
// On the hub, Hub wires the cluster's hub to the daemon's parts: the
// router's Remote (threads.go: a message, a new thread or a control sent to
// a node's thread, and the thread read from its node), the messages that
// failed before their node took them (failures.go), the newest receipt of
// each message sent, from the relay (receipts.go), the kept asks resolved as
// machines come online (asks.go), and the machines and their threads for
// the web channel, push, the ACP side and the plugin host (machines.go).
package remote
