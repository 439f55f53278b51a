package cluster

// The rules request: the hub asks a node's ruleset to list, add, change,
// remove or test its approval rules (internal/ruleset's Request and Answer,
// carried as they are). A node's rules stay the node's: they answer its
// cards where the card opens, with the hub away or not.

import "context"

// rulesSubject is where the hub asks node about its approval rules.
func rulesSubject(node string) string { return ToSubject(node) + ".rules" }

// ServeRules answers the hub's rules requests with serve (this machine's
// ruleset.Set.Serve). It lasts as long as the link.
func (l *Link) ServeRules(serve func(ctx context.Context, req []byte) []byte) error {
	return l.servePart(rulesSubject(l.opt.Node), "rules", serve)
}

// NodeRules sends node a rules request and returns its answer. A node that
// nothing answers for is chat.ErrAway, saying so.
func (h *Hub) NodeRules(ctx context.Context, node string, req []byte) ([]byte, error) {
	return h.askPart(ctx, node, rulesSubject(node), "rules", req)
}
