package redisstore

import (
	"context"
	"encoding/json"

	"github.com/hookline/hookline/storage"
)

// poison dead-letters a job Lease has just leased whose stored record
// cannot be decoded (cause): left leased it would come back at every lease
// expiry, forever. It finishes the job as Dead under the lease just taken,
// so the DLQ entry and the event's state are written as for any dead job;
// the entry keeps what could be salvaged of the event (with the payload
// record it shares, if any), or the raw record as its payload. If that fails (Redis unreachable), the job stays leased
// and the next lease after its expiry tries again.
func (s *Store) poison(ctx context.Context, row any, cause error) {
	f, _ := row.([]any)
	if len(f) != 5 && len(f) != 6 {
		return
	}
	str := func(i int) string { v, _ := f[i].(string); return v }
	id, token, raw := str(0), str(1), str(2)
	p, ok := s.leasePartition(token)
	if id == "" || !ok {
		return
	}
	ev, attempts, rawPayload := storage.PoisonEvent(id, []byte(raw))
	_ = storage.JoinPayload(&ev, leasedPayload(f)) // the entry keeps the shared payload, if there is one
	if a := str(3); a != "" {
		var att []storage.Attempt
		if json.Unmarshal([]byte(a), &att) == nil {
			attempts = att
		}
	}
	// the fields the lease did not return: the source (the job's lane),
	// the claim key (storage.ClaimKey) and an ordered job's chain
	vals, err := s.c.HMGet(ctx, p.ev(id), "src", "ck", "chain").Result()
	if err != nil || len(vals) != 3 {
		return
	}
	src, _ := vals[0].(string)
	ck, _ := vals[1].(string)
	chain, _ := vals[2].(string)
	job := &storage.Job{Event: ev, Attempts: attempts, Lease: token}
	if src != "" {
		job.Source = src
	}
	if _, eventID, ok := storage.SplitClaimKey(ck); ok && eventID != "" {
		job.EventID = eventID
	}
	if key, ok := storage.OrderKeyOfChain(storage.LaneOf(&job.Event), chain); ok && job.OrderKey == "" {
		job.OrderKey = key // a chained job keeps its key: its entry must be able to release it
	}
	_ = s.Finish(ctx, job, storage.Outcome{Result: storage.Dead, Error: storage.PoisonError(cause, rawPayload)})
}
