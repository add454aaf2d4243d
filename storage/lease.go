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

// NamedDue lists, for EnqueueResult.Due, the deliveries of jobs (an
// event's, as DeliveriesOf made them) enqueued due at due that a lease may
// take by name: every one but the ordered ones, whose chains decide when
// they go. part is the backend's Candidate.Part.
func NamedDue(jobs []Event, due time.Time, part int) []Candidate {
	var out []Candidate
	for i := range jobs {
		if ChainOf(&jobs[i]) == "" {
			out = append(out, Candidate{Lane: LaneOf(&jobs[i]), Due: due, ID: jobs[i].ID, Part: part})
		}
	}
	return out
}

// LeasableNamed decides what every backend's LeaseNamed does first: with
// ctx done it returns ctx's error; otherwise the candidates due at now
// (those not due yet are left alone, as Lease would leave them).
func LeasableNamed(ctx context.Context, cands []Candidate, now time.Time) ([]Candidate, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]Candidate, 0, len(cands))
	for _, c := range cands {
		if !c.Due.After(now) {
			out = append(out, c)
		}
	}
	return out, nil
}
