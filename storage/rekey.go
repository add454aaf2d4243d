package storage

// Rekey: re-sealing every stored record under the first encryption key
// (seal.go), after a key was added in front of the others, so that the
// older ones can be removed. Every record that can hold a payload is
// walked in the backend's own order (its jobs and events, the payload
// records their deliveries share, its DLQ entries): those sealed under an
// older key are re-sealed, those in clear (written before encryption was
// on) are sealed. The backends walk and write, each record compared and
// set so that a concurrent write (a Finish, a lease, an erasure) is never
// overwritten; the rules (which record to re-seal, how) are the Keyring's.
//
// A rekey is resumable: its progress, with the backend's cursor, is saved
// in the store after each batch (RekeyState), so that one cut short (a
// crash, a cancelled context) goes on where it stopped when started again
// under the same key; and idempotent anyway: a record sealed under the
// first key is left alone, so a second run rewrites nothing. A record
// whose key is missing is counted as failed and left as it is (the rekey
// goes on): its id and key id are in Error.

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Rekey states.
const (
	RekeyRunning = "running"
	RekeyDone    = "done"
	RekeyFailed  = "failed"
)

// DefaultRekeyBatch is the number of records a rekey step reads.
const DefaultRekeyBatch = 200

// Bounds of RekeyOptions.
const (
	// MaxRekeyBatch bounds RekeyOptions.Batch: one step is one write
	// transaction (embedded) or script run per record (Redis), and a long
	// transaction delays the writes of live traffic.
	MaxRekeyBatch = 5000
	// MaxRekeyPause bounds RekeyOptions.Pause.
	MaxRekeyPause = 10 * time.Second
)

// RekeyOptions paces a rekey, so that one on a busy store takes only a
// share of it.
type RekeyOptions struct {
	// Batch is the number of records a step reads (0: DefaultRekeyBatch,
	// at most MaxRekeyBatch).
	Batch int
	// Pause is the wait between two steps (0: none, at most
	// MaxRekeyPause).
	Pause time.Duration
}

// Validate says what is wrong with o, naming the field as the admin API
// does (batch, pause).
func (o RekeyOptions) Validate() error {
	return checkPace(o.Batch, MaxRekeyBatch, o.Pause, MaxRekeyPause)
}

// checkPace is the rule of a background walk's pace (a rekey's, a tenant
// erasure's): batch 0 (the default) to maxBatch, pause 0 to maxPause; its
// error names the field as the admin API does.
func checkPace(batch, maxBatch int, pause, maxPause time.Duration) error {
	if batch < 0 || batch > maxBatch {
		return fmt.Errorf("batch must be between 1 and %d", maxBatch)
	}
	if pause < 0 || pause > maxPause {
		return fmt.Errorf("pause must be between 0 and %s", maxPause)
	}
	return nil
}

// ErrNoKey is the error of a rekey without an encryption key.
var ErrNoKey = errors.New("no encryption key is configured")

// RekeyProgress is the state of the last rekey of a store, as saved in
// it.
type RekeyProgress struct {
	// State is running, done or failed ("": never run).
	State string `json:"state"`
	// KeyID is the id of the key records are re-sealed under (KeyID).
	KeyID string `json:"key_id,omitempty"`
	// Cursor is where the backend's walk goes on (backend-defined).
	Cursor string `json:"cursor,omitempty"`
	// Scanned counts the records read, Resealed those rewritten, Failed
	// those that could not be opened (their key is missing). A DLQ
	// entry's delivery is read again with the entry (a retry may have
	// given it the entry's copy since its own record was read): rewritten
	// then, it counts in Resealed, not again in Scanned or Failed.
	Scanned  int `json:"scanned"`
	Resealed int `json:"resealed"`
	Failed   int `json:"failed"`
	// StartedAt, UpdatedAt and FinishedAt are when the rekey began, saved
	// its last batch and ended.
	StartedAt  time.Time `json:"started_at,omitzero"`
	UpdatedAt  time.Time `json:"updated_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Error says why it failed, or names a record it could not open.
	Error string `json:"error,omitempty"`
}

// RekeyStep is what one RekeyBatch did.
type RekeyStep struct {
	// Next is the cursor of the next batch; Done is true when the walk is
	// over.
	Next string
	Done bool
	// Scanned, Resealed and Failed count the batch's records (as in
	// RekeyProgress); FailedError is the error of one of the failed.
	Scanned, Resealed, Failed int
	FailedError               error
}

// Rekeyer is the backend's part of a rekey.
type Rekeyer interface {
	// RekeyBatch walks up to n records from cursor ("": the first) and
	// re-seals each under k's first key as the Keyring's Reseal* methods
	// say, writing back only a record unchanged since it was read.
	RekeyBatch(ctx context.Context, k *Keyring, cursor string, n int) (RekeyStep, error)
	// RekeyState returns the saved progress of the last rekey (zero when
	// none ran).
	RekeyState(ctx context.Context) (RekeyProgress, error)
	// SaveRekeyState saves p, for RekeyState.
	SaveRekeyState(ctx context.Context, p RekeyProgress) error
}

// Rekey re-seals every record of r under k's first key, o.Batch records
// at a time with o.Pause between batches, saving its progress after each
// batch and calling onBatch (if set) with it. A rekey under the same key that did not finish is resumed
// from its saved cursor; otherwise it starts over. It returns the final
// progress; an error (the store failing, ctx cancelled) leaves the saved
// progress running, to be resumed.
func Rekey(ctx context.Context, r Rekeyer, k *Keyring, o RekeyOptions, onBatch func(RekeyProgress)) (RekeyProgress, error) {
	if !k.Enabled() {
		return RekeyProgress{}, ErrNoKey
	}
	if err := o.Validate(); err != nil {
		return RekeyProgress{}, err
	}
	batch := o.Batch
	if batch == 0 {
		batch = DefaultRekeyBatch
	}
	p, err := r.RekeyState(ctx)
	if err != nil {
		return p, err
	}
	now := time.Now()
	if p.State == RekeyDone || p.KeyID != k.CurrentID() {
		p = RekeyProgress{KeyID: k.CurrentID(), StartedAt: now}
	}
	if p.Failed == 0 {
		p.Error = "" // why an earlier run stopped
	}
	p.State, p.FinishedAt, p.UpdatedAt = RekeyRunning, time.Time{}, now
	if err := r.SaveRekeyState(ctx, p); err != nil {
		return p, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return p, err
		}
		step, err := r.RekeyBatch(ctx, k, p.Cursor, batch)
		if err != nil {
			return p, err
		}
		p.Cursor = step.Next
		p.Scanned += step.Scanned
		p.Resealed += step.Resealed
		p.Failed += step.Failed
		if step.FailedError != nil {
			p.Error = fmt.Sprintf("%d record(s) could not be re-sealed; last: %v", p.Failed, step.FailedError)
		}
		p.UpdatedAt = time.Now()
		if step.Done {
			p.State, p.FinishedAt, p.Cursor = RekeyDone, p.UpdatedAt, ""
		}
		if err := r.SaveRekeyState(context.WithoutCancel(ctx), p); err != nil {
			return p, err
		}
		if onBatch != nil {
			onBatch(p)
		}
		if step.Done {
			return p, nil
		}
		if o.Pause > 0 {
			select {
			case <-ctx.Done():
				return p, ctx.Err()
			case <-time.After(o.Pause):
			}
		}
	}
}
