package embedded_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestBlockCacheSize: Options.BlockCache bounds what the engine keeps in
// memory of the blocks it reads; the same reads on a store with the
// default cache keep more than that bound (so the bound is what held).
func TestBlockCacheSize(t *testing.T) {
	const small = 1 << 20
	used := func(cache int64) int64 {
		s, err := embedded.Open(filepath.Join(t.TempDir(), "hookline.db"), embedded.Options{BlockCache: cache})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx := t.Context()
		body := make([]byte, 2048)
		var ids []string
		for i := range 1500 {
			ev := storagetest.NewEvent("stripe", fmt.Sprintf("evt_%d", i))
			ev.Body = body
			if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, ev.EventID)
		}
		if err := s.Engine().Flush(); err != nil { // the records into tables, read through the cache
			t.Fatal(err)
		}
		for _, id := range ids {
			if _, err := s.Lookup(ctx, "stripe", id); err != nil {
				t.Fatal(err)
			}
		}
		return s.Engine().Metrics().BlockCache.Size
	}
	if n := used(small); n > small {
		t.Errorf("a %d-byte cache holds %d bytes", small, n)
	}
	if n := used(0); n <= small {
		t.Errorf("the default cache holds %d bytes after the same reads, want more than %d: the test read too little", n, small)
	}
}
