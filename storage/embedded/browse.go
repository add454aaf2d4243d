package embedded

import (
	"bytes"
	"context"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// ListEvents implements storage.Store. It walks two buckets keyed by the
// time-ordered internal IDs, backwards from the cursor, side by side: the
// records (bEvents: every delivery's job, delivered and dead ones until
// retention removes them, and payload records) and the DLQ entries (bDLQ:
// an event whose records are past retention is still known by them). An
// event's keys are adjacent in both (its ID, then "<id>\x00", then
// "<id>~<destination>"). Each event met is read as Lookup reads it; a page
// costs at most f.ScanBudget() events read, in one read transaction.
func (s *Store) ListEvents(ctx context.Context, f storage.EventFilter) (storage.EventPage, error) {
	page := storage.EventPage{Events: []storage.EventInfo{}}
	after, err := storage.ParseEventCursor(f.Cursor)
	if err != nil {
		return page, err
	}
	limit, budget := f.EffectiveLimit(), f.ScanBudget()
	now := s.now()
	err = s.view(func(tx *kv.Tx) error {
		recs := newBackwards(tx.Bucket(bEvents).Cursor(), after)
		dlq := newBackwards(tx.Bucket(bDLQ).Cursor(), after)
		examined, last := 0, ""
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			id := max(recs.id, dlq.id)
			if id == "" {
				return nil
			}
			if len(page.Events) == limit || examined == budget {
				page.NextCursor = storage.EventCursor(last)
				return nil
			}
			recs.skip(id)
			dlq.skip(id)
			examined, last = examined+1, id
			info := browseInfo(tx, s.leases, id, now)
			if info != nil && f.Matches(info) {
				page.Events = append(page.Events, *info)
			}
		}
	})
	if err != nil {
		return storage.EventPage{Events: []storage.EventInfo{}}, wrapIOErr(err)
	}
	return page, nil
}

// browseInfo is what Lookup reports of event id, whatever its source (nil:
// nothing readable is left of it).
func browseInfo(tx *kv.Tx, l *leases, id string, now time.Time) *storage.EventInfo {
	destinations := destinationsOf(tx, id)
	source, ok := sourceOf(tx, id, destinations)
	if !ok {
		return nil
	}
	info, err := storage.LookupEvent(id, destinations, func(id string) (*storage.EventInfo, error) {
		return deliveryInfo(tx, l, id, source, now)
	})
	if err != nil {
		return nil // an unreadable event is not listed
	}
	return info
}

// sourceOf is the source of event id, from the first of its deliveries
// that has a readable record or DLQ entry.
func sourceOf(tx *kv.Tx, id string, destinations []string) (string, bool) {
	if destinations == nil {
		destinations = []string{storage.DefaultDestination}
	}
	for _, d := range destinations {
		did := storage.DeliveryID(id, d)
		if rec, err := getRecord(tx, []byte(did)); err == nil && rec != nil {
			return rec.Source, true
		}
		if e, err := getEntry(tx, did); err == nil && e != nil {
			return e.Source, true
		}
	}
	return "", false
}

// backwards walks a bucket keyed by delivery IDs (and payload keys) from
// its last key, or from the last one below the event after, event by
// event.
type backwards struct {
	c     *kv.Cursor
	after string
	// id is the event of the current key ("": the walk is over).
	id string
}

func newBackwards(c *kv.Cursor, after string) *backwards {
	b := &backwards{c: c, after: after}
	var k []byte
	if after == "" {
		k, _ = c.Last()
	} else if k, _ = c.Seek([]byte(after)); k == nil {
		k, _ = c.Last()
	}
	b.at(k)
	return b
}

// at makes k the current key, moving back past the keys of events at or
// after the cursor's.
func (b *backwards) at(k []byte) {
	for ; k != nil; k, _ = b.c.Prev() {
		if id := eventOfKey(k); b.after == "" || id < b.after {
			b.id = id
			return
		}
	}
	b.id = ""
}

// skip moves back past the keys of event id, if it is the current one.
func (b *backwards) skip(id string) {
	if b.id != id {
		return
	}
	k, _ := b.c.Prev()
	for ; k != nil && eventOfKey(k) == id; k, _ = b.c.Prev() {
	}
	b.at(k)
}

// eventOfKey is the internal ID of the event a key of bEvents or bDLQ
// belongs to: a delivery's, or a payload record's ("<id>\x00").
func eventOfKey(k []byte) string {
	return storage.EventIDOfDelivery(string(bytes.TrimSuffix(k, []byte{0})))
}
