package embedded

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// The deliveries index of events with several deliveries (or a non-default
// one), written by Enqueue with the jobs:
//
//	event id -> storage.EncodeDestinations(destinations)
//
// An event delivered to the default destination alone has none: it is
// stored as before destinations existed. It is kept while a record or a
// DLQ entry of one of the event's deliveries is: the event browser and
// Lookup read the deliveries through it (dropDeliveries).
var bDeliveries = []byte("deliveries")

// The payload records of events live in bEvents beside their jobs,
// written by Enqueue with them (storage.SharePayload, a lone delivery's
// too) and removed with the event's last record (lastDelivery):
//
//	event id \x00 -> storage.EncodePayload(headers, body)
//
// The key sorts between the event's default delivery's ("<event id>") and
// its other deliveries' ("<event id>~<destination>"), so that an event's
// records share a page (one page written per event, not one per bucket);
// no job ID holds a NUL byte, and only the event browser and the rekey
// walk bEvents (both tell the two kinds of key apart). An event with one
// delivery stored by an earlier version has none: its job keeps its own
// body.

// payloadKey is the key of event id's payload record (storage.PayloadID).
func payloadKey(id string) []byte { return []byte(id + "\x00") }

// putPayload writes event id's payload record, if it has one.
func putPayload(tx *kv.Tx, id string, payload []byte) error {
	if payload == nil {
		return nil
	}
	return tx.Bucket(bEvents).Put(payloadKey(id), payload)
}

// joinPayload gives ev, a stored job, the body and headers of its event's
// payload record if it is marked as sharing it (storage.JoinPayload).
func joinPayload(tx *kv.Tx, ev *storage.Event) error {
	if !ev.SharedPayload {
		return nil
	}
	return storage.JoinPayload(ev, tx.Bucket(bEvents).Get(payloadKey(storage.PayloadID(ev.ID))))
}

// destinationsOf reads event id's deliveries index (nil: none).
func destinationsOf(tx *kv.Tx, id string) []string {
	return storage.DecodeDestinations(string(tx.Bucket(bDeliveries).Get([]byte(id))))
}

// putDeliveries writes event id's deliveries index, if it has one.
func putDeliveries(tx *kv.Tx, id string, destinations []string) error {
	if destinations == nil {
		return nil
	}
	return tx.Bucket(bDeliveries).Put([]byte(id), []byte(storage.EncodeDestinations(destinations)))
}

// otherDelivery reports whether a record of a delivery of event ev (to
// one of destinations, its deliveries index) other than delivery except
// is stored.
func otherDelivery(tx *kv.Tx, ev string, destinations []string, except string) bool {
	events := tx.Bucket(bEvents)
	for _, d := range destinations {
		if other := storage.DeliveryID(ev, d); other != except && events.Get([]byte(other)) != nil {
			return true
		}
	}
	return false
}

// entryLeft reports whether a DLQ entry of a delivery of event ev (to one
// of destinations, its deliveries index) is stored.
func entryLeft(tx *kv.Tx, ev string, destinations []string) bool {
	dlq := tx.Bucket(bDLQ)
	for _, d := range destinations {
		if dlq.Get([]byte(storage.DeliveryID(ev, d))) != nil {
			return true
		}
	}
	return false
}

// entriesLeft reports whether a DLQ entry of a delivery of event ev is
// stored: one of those its deliveries index ds names, or its default
// delivery's when it has none.
func entriesLeft(tx *kv.Tx, ev string, ds []string) bool {
	if ds == nil {
		return tx.Bucket(bDLQ).Get([]byte(ev)) != nil
	}
	return entryLeft(tx, ev, ds)
}

// lastDelivery reports whether removing the record of delivery id leaves
// its event without any record, and removes the event's payload record if
// so, and its deliveries index unless a DLQ entry of one of its
// deliveries is left (dropDeliveries removes it with the last entry). An
// event without an index has only this delivery (and a payload record
// unless an earlier version stored it). ds is the event's deliveries index
// as it read it (nil: none).
func lastDelivery(tx *kv.Tx, id string) (last bool, ds []string, err error) {
	ev := storage.EventIDOfDelivery(id)
	ds = destinationsOf(tx, ev)
	if otherDelivery(tx, ev, ds, id) {
		return false, ds, nil
	}
	if err := tx.Bucket(bEvents).Delete(payloadKey(storage.PayloadID(id))); err != nil {
		return false, ds, err
	}
	if ds == nil || entryLeft(tx, ev, ds) {
		return true, ds, nil
	}
	return true, ds, tx.Bucket(bDeliveries).Delete([]byte(ev))
}

// dropDeliveries removes the deliveries index of the event of delivery id
// once neither a record nor a DLQ entry of its deliveries is left (a DLQ
// entry past its retention was the last).
func dropDeliveries(tx *kv.Tx, id string) error {
	ev := storage.EventIDOfDelivery(id)
	ds := destinationsOf(tx, ev)
	if ds == nil || otherDelivery(tx, ev, ds, "") || entryLeft(tx, ev, ds) {
		return nil
	}
	return tx.Bucket(bDeliveries).Delete([]byte(ev))
}

// deliveriesRestored is the bMeta key set once restoreLookups ran.
var deliveriesRestored = []byte("lookups:entries")

// restoreLookups gives back, once, what an earlier version took away with
// an event's last job record while a DLQ entry of the event was kept: its
// deliveries index (when the entry is a named destination's), without
// which the event list, Lookup and erasure (of the event, or of its
// tenant) see the default delivery alone and miss the entry, and its claim
// (ended), by which Lookup and DELETE find it by its provider's id, until
// the entry's own retention (for ever with dlq_retention 0). The index is
// made again from what is left of the event: the destinations of its DLQ
// entries, and the default one's if its record or entry is left (no named
// delivery's record is: the index went with the last); an index that is
// there and misses the destination of one of the event's entries gets it.
// A claim is made where none is, or where it names an earlier event (ids
// are time-ordered: the later event took the provider's id, as it would
// have at enqueue); an event without a provider's id (its event id is its
// internal id) never had one.
func restoreLookups(tx *kv.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(bMeta)
	if err != nil || meta.Get(deliveriesRestored) != nil {
		return err
	}
	restored := map[string][]string{} // event id -> its index, made again
	var order []string
	claims := map[string]string{} // claim key -> event id, made again
	err = tx.Bucket(bDLQ).ForEach(func(k, v []byte) error {
		id := string(k)
		ev, d := storage.EventIDOfDelivery(id), storage.DestinationOfDelivery(id)
		var named struct {
			Source  string `json:"source"`
			EventID string `json:"event_id"`
		}
		if json.Unmarshal(v, &named) == nil && named.EventID != "" && named.EventID != ev {
			ck := storage.ClaimKey(named.Source, named.EventID)
			cur, again := claims[ck]
			held := false
			if c := tx.Bucket(bClaims).Get([]byte(ck)); !again && len(c) >= 8 {
				cur, held = string(c[8:]), timeAt(c).After(time.Now())
			}
			if ev > cur && !held {
				claims[ck] = ev
			}
		}
		ds, again := restored[ev]
		if !again {
			ds = destinationsOf(tx, ev)
		}
		if slices.Contains(ds, d) || (ds == nil && id == ev) {
			return nil // indexed, or an event's default delivery alone (no index)
		}
		if ds == nil && (tx.Bucket(bEvents).Get([]byte(ev)) != nil || tx.Bucket(bDLQ).Get([]byte(ev)) != nil) {
			ds = []string{storage.DefaultDestination}
		}
		if !again {
			order = append(order, ev)
		}
		restored[ev] = append(slices.Clone(ds), d)
		return nil
	})
	if err != nil {
		return err
	}
	for _, ev := range order {
		if err := tx.Bucket(bDeliveries).Put([]byte(ev), []byte(storage.EncodeDestinations(restored[ev]))); err != nil {
			return err
		}
	}
	for ck, ev := range claims {
		if err := tx.Bucket(bClaims).Put([]byte(ck), ended([]byte(ev))); err != nil {
			return err
		}
	}
	return meta.Put(deliveriesRestored, []byte{1})
}
