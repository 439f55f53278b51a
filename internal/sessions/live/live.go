// Package live tells which of an agent's sessions run now, for the agents
// that write no record of it: from the processes of this user (their open
// files, command lines, working directories and start times in /proc).
// Package sessions adds where each runs; the ACP driver asks it before it
// continues a session.
package live
