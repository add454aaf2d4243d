package storagemodules

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage/redisstore"
)

// TestRedisOpenRefusesPartitionChange: opening a Redis store (at the app's
// Start) with another partition count than the store was created with
// fails at once, with an error that says what to do, instead of orphaning
// the queued events.
func TestRedisOpenRefusesPartitionChange(t *testing.T) {
	srv := redistest.Start(t)
	open := func(partitions int) error {
		s := new(RedisStorage)
		in := fmt.Sprintf("redis {\naddress %s\nkey_prefix layouttest\npartitions %d\n}", srv.Addr, partitions)
		if err := s.UnmarshalCaddyfile(caddyfile.NewTestDispenser(in)); err != nil {
			t.Fatal(err)
		}
		if err := s.Provision(testContext(t)); err != nil {
			t.Fatal(err)
		}
		st, err := s.Open()
		if err == nil {
			st.Close()
		}
		return err
	}
	if err := open(4); err != nil {
		t.Fatal(err)
	}
	err := open(8)
	var le *redisstore.LayoutError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "redis store at layouttest was created with 4 partitions; this config says 8") {
		t.Fatalf("Open with another partition count: %v", err)
	}
	if err := open(4); err != nil {
		t.Fatal(err)
	}
}
