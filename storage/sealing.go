package storage

import (
	"context"
	"fmt"
	"time"
)

// SealingStore is a Store that seals what it stores and opens what it
// hands out (seal.go), above a backend that only ever sees sealed bytes:
//
//   - Enqueue seals the event's headers and body (a fan-out event's
//     payload record is then that sealed blob);
//   - Lease opens each job it hands out; a job that does not open (its key
//     is missing, or its blob is broken) is not handed out but finished as
//     Dead, its DLQ entry keeping the sealed payload and saying which key
//     is missing, so that adding the key back and retrying delivers it;
//   - Finish hands the backend the job without its opened body: a Dead
//     outcome's job is sealed again, for its DLQ entry;
//   - DLQGet opens the entry (an entry whose key is missing is an error
//     wrapping ErrKeyMissing), DLQList clears the sealed payloads it
//     lists, as it clears the others;
//   - RekeyBatch re-seals with its Keyring.
//
// With a Keyring not Enabled nothing is sealed, and what was sealed does
// not open (ErrKeyMissing). Records stored in clear read as before.
type SealingStore struct {
	Store
	keys   *Keyring
	inner  Store
	onDead func(job *Job, reason string)
}

// OnDead sets fn to be called with each job Lease dead-letters because it
// cannot be opened (after its DLQ entry is stored), so that it is counted
// and audited like any dead delivery. Set before the store is used.
func (s *SealingStore) OnDead(fn func(job *Job, reason string)) { s.onDead = fn }

// NewSealingStore wraps inner with keys.
func NewSealingStore(inner Store, keys *Keyring) *SealingStore {
	return &SealingStore{Store: inner, keys: keys, inner: inner}
}

// Interface guard
var _ Store = (*SealingStore)(nil)

// Unwrap returns the backend.
func (s *SealingStore) Unwrap() Store { return s.inner }

// Keys returns the Keyring.
func (s *SealingStore) Keys() *Keyring { return s.keys }

// Enqueue implements Queue: ev is stored sealed (a copy: ev is not
// changed).
func (s *SealingStore) Enqueue(ctx context.Context, ev *Event, dedupeUntil time.Time) (EnqueueResult, error) {
	if !s.keys.Enabled() || ev.Sealed != nil {
		return s.inner.Enqueue(ctx, ev, dedupeUntil)
	}
	sealed := *ev
	s.keys.SealEvent(&sealed)
	return s.inner.Enqueue(ctx, &sealed, dedupeUntil)
}

// KeyMissingReason is the Error of the DLQ entry of a job Lease could not
// open.
const KeyMissingReason = "stored payload could not be decrypted"

// Lease implements Queue: the jobs are opened; one that does not open is
// dead-lettered (see SealingStore).
func (s *SealingStore) Lease(ctx context.Context, now time.Time, n int, lease time.Duration, gate *Gate) ([]*Job, error) {
	jobs, err := s.inner.Lease(ctx, now, n, lease, gate)
	if err != nil {
		return nil, err
	}
	return s.opened(ctx, jobs), nil
}

// LeaseNamed implements Queue: the jobs are opened, as Lease's.
func (s *SealingStore) LeaseNamed(ctx context.Context, now time.Time, cands []Candidate, lease time.Duration) ([]*Job, error) {
	jobs, err := s.inner.LeaseNamed(ctx, now, cands, lease)
	if err != nil {
		return nil, err
	}
	return s.opened(ctx, jobs), nil
}

// opened opens the events of leased jobs; one that does not open is
// dead-lettered, and left out.
func (s *SealingStore) opened(ctx context.Context, jobs []*Job) []*Job {
	out := jobs[:0]
	for _, job := range jobs {
		if err := s.keys.OpenEvent(&job.Event); err != nil {
			reason := fmt.Sprintf("%s: %v", KeyMissingReason, err)
			// on failure the job stays leased: due again (and dead-lettered
			// then) when its lease expires
			if s.inner.Finish(ctx, job, Outcome{Result: Dead, Error: reason}) == nil && s.onDead != nil {
				s.onDead(job, reason)
			}
			continue
		}
		out = append(out, job)
	}
	return out
}

// Finish implements Queue: the backend gets the job without its opened
// body; a Dead outcome's job sealed again, for its DLQ entry.
func (s *SealingStore) Finish(ctx context.Context, job *Job, out Outcome) error {
	if !s.keys.Enabled() || (job.Body == nil && job.Headers == nil) {
		return s.inner.Finish(ctx, job, out)
	}
	sealed := *job
	if out.Result == Dead {
		s.keys.SealEvent(&sealed.Event)
	} else {
		sealed.Headers, sealed.Body = nil, nil
	}
	return s.inner.Finish(ctx, &sealed, out)
}

// DLQGet implements DeadLetters: the entry opened.
func (s *SealingStore) DLQGet(ctx context.Context, id string) (*DLQEntry, error) {
	e, err := s.inner.DLQGet(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.keys.OpenEntry(e); err != nil {
		return nil, fmt.Errorf("DLQ entry %s: %w", id, err)
	}
	return e, nil
}

// DLQList implements DeadLetters: the entries without their sealed
// payloads (a list has no payloads).
func (s *SealingStore) DLQList(ctx context.Context, f DLQFilter) (DLQPage, error) {
	page, err := s.inner.DLQList(ctx, f)
	for i := range page.Entries {
		page.Entries[i].Sealed = nil
	}
	return page, err
}

// RekeyBatch implements Rekeyer with the store's Keyring (k is ignored).
func (s *SealingStore) RekeyBatch(ctx context.Context, _ *Keyring, cursor string, n int) (RekeyStep, error) {
	return s.inner.RekeyBatch(ctx, s.keys, cursor, n)
}

// Rekey re-seals every record under the store's first key (Rekey).
func (s *SealingStore) Rekey(ctx context.Context, o RekeyOptions, onBatch func(RekeyProgress)) (RekeyProgress, error) {
	return Rekey(ctx, s.inner, s.keys, o, onBatch)
}
