//go:build !linux

package daemon_test

import "net/http"

// arrivalConn has no kernel receive stamps here (SO_TIMESTAMPNS is Linux's):
// the benchmark reports no server's and reader's shares.
type arrivalConn struct{ last int64 }

// arrivalClient is the default client; got is never called.
func arrivalClient(func(*arrivalConn)) *http.Client { return nil }
