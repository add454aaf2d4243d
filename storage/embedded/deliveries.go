package embedded

import (
	bolt "go.etcd.io/bbolt"

	"github.com/hookline/hookline/storage"
)

// The deliveries index of events with several deliveries (or a non-default
// one), written by Enqueue with the jobs:
//
//	event id -> storage.EncodeDestinations(destinations)
//
// An event delivered to the default destination alone has none: it is
// stored as before destinations existed.
var bDeliveries = []byte("deliveries")

// destinationsOf reads event id's deliveries index (nil: none).
func destinationsOf(tx *bolt.Tx, id string) []string {
	return storage.DecodeDestinations(string(tx.Bucket(bDeliveries).Get([]byte(id))))
}

// putDeliveries writes event id's deliveries index, if it has one.
func putDeliveries(tx *bolt.Tx, id string, destinations []string) error {
	if destinations == nil {
		return nil
	}
	return tx.Bucket(bDeliveries).Put([]byte(id), []byte(storage.EncodeDestinations(destinations)))
}

// lastDelivery reports whether removing the record of delivery id leaves
// its event without any record, and removes the event's deliveries index
// if so. An event without an index has only this delivery.
func lastDelivery(tx *bolt.Tx, id string) (bool, error) {
	ev := storage.EventIDOfDelivery(id)
	ds := destinationsOf(tx, ev)
	for _, d := range ds {
		if other := storage.DeliveryID(ev, d); other != id && tx.Bucket(bEvents).Get([]byte(other)) != nil {
			return false, nil
		}
	}
	if ds == nil {
		return true, nil
	}
	return true, tx.Bucket(bDeliveries).Delete([]byte(ev))
}
