package storage

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// NewLeaseToken returns a fresh random lease token (16 hex digits). A
// backend may add to it (Redis prefixes the partition and suffixes the
// job's position), never replace it.
func NewLeaseToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// DueAt is when a job finished with o (Retry or Release) is due again:
// o.Due, or now when o.Due is zero.
func (o Outcome) DueAt(now time.Time) time.Time {
	if o.Due.IsZero() {
		return now
	}
	return o.Due
}
