package storage

import (
	"context"
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

// LeaseWanted decides what every backend's Lease does before it reads the
// store: with ctx done it returns ctx's error, and a call for n <= 0 jobs
// leases nothing. Lease goes on only when want is true; otherwise it
// returns no jobs and err.
func LeaseWanted(ctx context.Context, n int) (want bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return n > 0, nil
}
