package redisstore_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestListsReadTheIndexOnly: a DLQ or replay page whose filter matches
// nothing examines its whole scan budget (1000 index entries for a limit
// of 50) and reads none of the 4 KiB entries behind them: what Redis
// sends back is a small part of what the entries hold.
func TestListsReadTheIndexOnly(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	for _, tc := range storagetest.NothingPages {
		st := redisstore.New(redis.NewClient(&redis.Options{Addr: srv.Addr}), redisstore.Options{Prefix: redistest.Prefix()})
		const n, size = 1000, 4096
		storagetest.LoadFinished(t, st, n, size, tc.Result)
		before := netOutput(t, c)
		if err := tc.List(t, st); err != nil {
			t.Fatal(err)
		}
		if got := netOutput(t, c) - before; got > n*size/8 {
			t.Errorf("result %d: a page matching nothing made Redis send %d KiB over %d entries of %d KiB: it read the entries, not their fields",
				tc.Result, got>>10, n, size>>10)
		}
		st.Close()
	}
}

// netOutput is the server's total_net_output_bytes.
func netOutput(t *testing.T, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(t.Context(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_net_output_bytes:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no total_net_output_bytes in INFO stats")
	return 0
}
