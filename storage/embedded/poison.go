package embedded

import (
	"bytes"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// poison dead-letters the job id of lane whose record cannot be decoded
// (cause), inside the lease transaction that met it (its due key already
// removed): without this every lease would fail on it, forever. The DLQ
// entry keeps what could be salvaged of the event, or the raw record as
// its payload; the record is replaced by a readable dead one, so that
// lookups, DLQ retries and retention work as for any dead event.
func poison(tx *kv.Tx, lane string, id []byte, cause error, now time.Time) error {
	raw := bytes.Clone(tx.Bucket(bEvents).Get(id))
	ev, attempts, rawPayload := storage.PoisonEvent(string(id), raw)
	if ev.Source == "" {
		ev.Source = storage.SourceOfLane(lane)
	}
	if ev.OrderKey == "" {
		// a chained job keeps its key: its entry must be able to release it
		ev.OrderKey = heldKey(tx, storage.LaneOf(&ev), string(id))
	}
	rec := &record{Job: storage.Job{Event: ev, Attempts: attempts}}
	if err := deadLetter(tx, rec, storage.PoisonError(cause, rawPayload), now); err != nil {
		return err
	}
	// as any dead job: the head of an ordered chain with on_dead skip lets
	// the next go (with block it holds its key until its entry is settled)
	if storage.PopsChain(&rec.Event, storage.Dead) {
		if err := popChain(tx, storage.ChainOf(&rec.Event), rec.ID, now); err != nil {
			return err
		}
	}
	rec.Status = storage.StatusDead
	return finishRecord(tx, rec, now)
}
