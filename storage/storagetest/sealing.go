package storagetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// TestKey is the n-th encryption key of the tests (n >= 1): KeySize bytes
// of n.
func TestKey(n byte) []byte { return bytes.Repeat([]byte{n}, storage.KeySize) }

// TestKeyring is the Keyring of the test keys ns, in order (the first
// seals).
func TestKeyring(t testing.TB, ns ...byte) *storage.Keyring {
	t.Helper()
	keys := make([][]byte, len(ns))
	for i, n := range ns {
		keys[i] = TestKey(n)
	}
	k, err := storage.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// DeadLettered enqueues ev, an event with one delivery, into s and
// dead-letters that delivery (one attempt answered 400): its DLQ entry
// holds the payload as s stores it.
func DeadLettered(t testing.TB, s storage.Store, ev *storage.Event) {
	t.Helper()
	mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
	finish(t, s, leaseOneOf(t, s, ev.ID), storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 400, "bad"), Error: "400"})
}

// Sealing is f with every store wrapped in a storage.SealingStore of
// keys: the whole suite runs again with encryption on. Dump is left out
// (the checks that count a payload's copies in the raw bytes cannot find
// it sealed; the rekey tests look for it there instead).
func Sealing(f Factory, keys *storage.Keyring) Factory {
	g := f
	g.Dump = nil
	g.Open = func(t *testing.T) storage.Store { return storage.NewSealingStore(f.Open(t), keys) }
	if f.Reopen != nil {
		g.Reopen = func(t *testing.T, s storage.Store) storage.Store {
			return storage.NewSealingStore(f.Reopen(t, Unseal(s)), keys)
		}
	}
	if f.Second != nil {
		g.Second = func(t *testing.T, s storage.Store) storage.Store {
			return storage.NewSealingStore(f.Second(t, Unseal(s)), keys)
		}
	}
	if f.Uncounted != nil {
		g.Uncounted = func(t *testing.T, s storage.Store) storage.Store {
			return storage.NewSealingStore(f.Uncounted(t, Unseal(s)), keys)
		}
	}
	if f.Legacy != nil {
		g.Legacy = func(t *testing.T, s storage.Store, source string) { f.Legacy(t, Unseal(s), source) }
	}
	return g
}

// Unseal is the backend under a SealingStore (s itself otherwise).
func Unseal(s storage.Store) storage.Store {
	if ss, ok := s.(*storage.SealingStore); ok {
		return ss.Unwrap()
	}
	return s
}
