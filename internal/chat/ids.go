package chat

import (
	"crypto/rand"
	"encoding/base32"
)

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns a random id with a prefix, e.g. "t_k3j…" for a thread.
func NewID(prefix string) string {
	var b [10]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return prefix + "_" + idEncoding.EncodeToString(b[:])
}

// NewThreadID returns a fresh thread id.
func NewThreadID() ThreadID { return ThreadID(NewID("t")) }
