//go:build !notailnet

package main

import "github.com/parleyhq/parley/internal/tailnet/tsnode"

// joinTailnet is how `parley serve` joins the tailnet for [tailscale]. tsnet
// is linked here only (package tailnet says why); `go build -tags notailnet`
// leaves it out (notailnet.go).
var joinTailnet = tsnode.Join
