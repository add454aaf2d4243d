package embedded_test

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/storagetest"
)

// BenchmarkEnqueueSealed compares ingest (storagetest.BenchmarkEnqueue:
// 1 KiB events, concurrent) with and without encryption at rest, on the
// embedded store: the target is sealed >= 0.9x the events/s of clear.
//
//	go test ./storage/embedded/ -run '^$' -bench EnqueueSealed -benchtime 3s -count 3
func BenchmarkEnqueueSealed(b *testing.B) {
	storagetest.BenchmarkEnqueueSealed(b, func(b *testing.B) storage.Store {
		st, err := embedded.Open(filepath.Join(b.TempDir(), "bench.db"), embedded.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st
	})
}

// BenchmarkSeal1KiB is the seal of one 1 KiB event alone (its headers and
// body encoded, then AES-256-GCM with a random nonce).
func BenchmarkSeal1KiB(b *testing.B) {
	keys, err := storage.NewKeyring(storagetest.TestKey(1))
	if err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 1024)
	h := http.Header{"Content-Type": {"application/json"}}
	b.SetBytes(1024)
	b.ReportAllocs()
	for b.Loop() {
		ev := storage.Event{ID: "01a2b3c4", Headers: h, Body: body}
		keys.SealEvent(&ev)
	}
}
