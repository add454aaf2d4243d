package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestListingsWithoutIndexFields: entries and finished events written
// before their hashes kept the listing's fields (dst, ty; src on the
// oldest) list the same (each read in full).
func TestListingsWithoutIndexFields(t *testing.T) {
	srv := redistest.Start(t)
	prefix := redistest.Prefix()
	st := redisstore.New(redis.NewClient(&redis.Options{Addr: srv.Addr}), redisstore.Options{Prefix: prefix})
	defer st.Close()
	storagetest.LoadFinished(t, st, 120, 64, storage.Dead)
	storagetest.LoadFinished(t, st, 120, 64, storage.Delivered)
	want := storagetest.ListingsOf(t, st)

	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	n := 0
	for _, pattern := range []string{"{" + prefix + ":*}:dlq:*", "{" + prefix + ":*}:ev:*"} {
		iter := c.Scan(t.Context(), 0, pattern, 500).Iterator()
		for iter.Next(t.Context()) {
			fields := []string{"dst", "ty"}
			if n%2 == 0 {
				fields = append(fields, "src")
			}
			if err := c.HDel(t.Context(), iter.Val(), fields...).Err(); err != nil {
				t.Fatal(err)
			}
			n++
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n < 240 {
		t.Fatalf("stripped the fields of %d hashes, want 240", n)
	}
	storagetest.SameListings(t, want, storagetest.ListingsOf(t, st), 120, 120)
}
