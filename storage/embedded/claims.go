package embedded

import (
	"bytes"
	"time"

	"github.com/hookline/hookline/storage/embedded/kv"
)

// Claims. A deduplicated event's claim is one key in bClaims:
//
//	source \x00 event id -> expires (8 bytes, Unix nanoseconds) | event id
//
// written by Enqueue with the event's records, indexed by its expiry in
// bClaimExp. It holds (a resend is a duplicate) until it expires, and the
// same key is also how an event is found by its provider's id (Lookup,
// Erase). So it lives as long as either is needed: past its expiry while
// a record or a DLQ entry of the event exists (the sweep of bClaimExp then
// ends it, with expiry 0, but keeps it), and past the event's last record
// and entry while it holds. Whichever ends last removes it: the claims
// sweep (claimExpired) or the removal of the last record or entry
// (releaseClaim, at retention, at dlq_retention or at erasure).
//
// Earlier versions kept the id in a second index, bIDs, written beside the
// claim: a second randomly placed key, so a second page written, per
// event. foldIDs moves what is left of it into bClaims when a file is
// opened.

// recordsLeft reports whether a record or a DLQ entry of event id is
// still stored: its default delivery's or one of its other deliveries'
// (its payload record goes with the last record: it tells nothing more).
func recordsLeft(tx *kv.Tx, id string) bool {
	if tx.Bucket(bEvents).Get([]byte(id)) != nil || tx.Bucket(bDLQ).Get([]byte(id)) != nil {
		return true
	}
	ds := destinationsOf(tx, id)
	return otherDelivery(tx, id, ds, "") || entryLeft(tx, id, ds)
}

// claimExpired is the claims sweep's step for claim ck, whose expiry key
// (exp, 8 bytes) has come, unless it was renewed since (a new event took
// the id: its own expiry key is later). The claim ends: it goes, or, while
// a record or an entry of its event is still stored, its expiry becomes
// 0 (the id is free for a new event; releaseClaim removes the key with the
// last of them).
func claimExpired(tx *kv.Tx, ck, exp []byte) error {
	claims := tx.Bucket(bClaims)
	v := claims.Get(ck)
	if len(v) < 8 || !bytes.Equal(v[:8], exp) {
		return nil
	}
	if id := v[8:]; recordsLeft(tx, string(id)) {
		return claims.Put(bytes.Clone(ck), ended(id))
	}
	return claims.Delete(ck)
}

// ended is the value of a claim of event id that has ended but is kept
// for its records: expiry 0.
func ended(id []byte) []byte { return append(make([]byte, 8, 8+len(id)), id...) }

// releaseClaim is called once a record or a DLQ entry of event id is
// gone: its claim ck goes too if it has expired (one that holds stays
// until the claims sweep), is still the event's (not a later event's), and
// kept reports that nothing else of the event is left (the caller's
// cheapest way to tell: asked only of such a claim).
func releaseClaim(tx *kv.Tx, ck []byte, id string, now time.Time, kept func() bool) error {
	claims := tx.Bucket(bClaims)
	v := claims.Get(ck)
	if len(v) < 8 || string(v[8:]) != id || timeAt(v).After(now) || kept() {
		return nil
	}
	return claims.Delete(ck)
}

// foldIDs moves an earlier version's (source, event id) index into the
// claims (see above): an id whose claim had expired and been swept gets a
// claim that has expired (expiry 0), kept for its records as a new one
// would be; then the index is emptied. Once done it costs one read.
func foldIDs(tx *kv.Tx) error {
	ids := tx.Bucket(bIDs)
	if k, _ := ids.Cursor().First(); k == nil {
		return nil
	}
	claims := tx.Bucket(bClaims)
	var keys [][]byte
	err := ids.ForEach(func(ck, id []byte) error {
		keys = append(keys, bytes.Clone(ck))
		if claims.Get(ck) != nil {
			return nil // the claim names the same event, or a later one
		}
		return claims.Put(bytes.Clone(ck), ended(id))
	})
	if err != nil {
		return err
	}
	for _, ck := range keys {
		if err := ids.Delete(ck); err != nil {
			return err
		}
	}
	return nil
}
