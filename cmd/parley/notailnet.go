//go:build notailnet

package main

import "github.com/parleyhq/parley/internal/tailnet"

// Built with -tags notailnet: no tsnet (26 MB less, and its ~270 packages not
// compiled), and `parley serve` refuses [tailscale] with a clear error. The
// fast tier's tests build parley so (testkit.ParleyBinary under -short).
var joinTailnet tailnet.Join
