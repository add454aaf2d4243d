package storagetest

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/storage"
)

// Helpers for the backends' own tests of the bulk listings (DLQList,
// ListDelivered): what a listing reads, and what it lists when the index
// lacks what an earlier version did not write.

// LoadFinished stores n events of source "src<i%4>", type "type<i%8>" and
// tenant "tenant<i%5>",
// each with a payload of size bytes (32 writers), and finishes each with
// result (Dead: n DLQ entries; Delivered: n events to replay), for the
// listing benchmarks and the tests of what a listing reads.
func LoadFinished(tb testing.TB, s storage.Store, n, size int, result storage.Result) {
	ctx := tb.Context()
	body := make([]byte, size)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	enqueueMany(tb, s, n, -time.Second, func(i int64) *storage.Event {
		return &storage.Event{ID: uuid.NewString(), EventID: fmt.Sprintf("evt_%d", i), Dedupe: true,
			Source: fmt.Sprintf("src%d", i%4), Type: fmt.Sprintf("type%d", i%8), Tenant: fmt.Sprintf("tenant%d", i%5), Upstream: "http://127.0.0.1:1/",
			Body: body, ReceivedAt: time.Now()}
	})
	for done := 0; done < n; {
		jobs, err := s.Lease(ctx, time.Now(), min(1000, n-done), time.Minute, nil)
		if err != nil || len(jobs) == 0 {
			tb.Fatalf("Lease: %d jobs, %v", len(jobs), err)
		}
		var fwg sync.WaitGroup
		for _, j := range jobs {
			fwg.Add(1)
			go func() {
				defer fwg.Done()
				if err := s.Finish(ctx, j, storage.Outcome{Result: result, Error: "bench"}); err != nil {
					tb.Error(err)
				}
			}()
		}
		fwg.Wait()
		done += len(jobs)
	}
}

// allPages follows a listing's cursors to its end: list answers the ids
// of one page after cursor and the next cursor.
func allPages(tb testing.TB, name string, list func(cursor string) ([]string, string, error)) []string {
	tb.Helper()
	var ids []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10000 {
			tb.Fatalf("%s: no end", name)
		}
		page, next, err := list(cursor)
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		ids = append(ids, page...)
		if cursor = next; cursor == "" {
			return ids
		}
	}
}

// ListingsOf is what DLQList and ListDelivered list, page after page
// (limit 7), under a set of filters over what LoadFinished stores, by the
// filter's name ("dlq all", "replay source", ...): the same store must
// list the same before and after its index loses what it keeps of each
// entry (written by an earlier version), only slower (SameListings).
func ListingsOf(tb testing.TB, s storage.Store) map[string][]string {
	tb.Helper()
	out := map[string][]string{}
	for name, f := range map[string]storage.DLQFilter{"all": {}, "source": {Source: "src1"}, "type": {Type: "type3"},
		"tenant": {Tenant: "tenant2"}, "pending": {Status: storage.DLQPending}, "resolved": {Status: storage.DLQResolved},
		"destination source type": {Destination: "default", Source: "src2", Type: "type2"}, "nothing": {Type: "nothing"}} {
		out["dlq "+name] = allPages(tb, "dlq "+name, func(cursor string) ([]string, string, error) {
			f.Limit, f.Cursor = 7, cursor
			p, err := s.DLQList(tb.Context(), f)
			var ids []string
			for _, e := range p.Entries {
				ids = append(ids, e.ID)
			}
			return ids, p.NextCursor, err
		})
	}
	for name, f := range map[string]storage.ReplayFilter{"all": {}, "source": {Source: "src1"}, "type": {Type: "type3"},
		"tenant": {Tenant: "tenant2"}, "destination source type": {Destination: "default", Source: "src2", Type: "type2"}, "nothing": {Type: "nothing"}} {
		out["replay "+name] = allPages(tb, "replay "+name, func(cursor string) ([]string, string, error) {
			f.Limit, f.Cursor = 7, cursor
			p, err := s.ListDelivered(tb.Context(), f)
			var ids []string
			for _, e := range p.Events {
				ids = append(ids, e.ID)
			}
			return ids, p.NextCursor, err
		})
	}
	return out
}

// SameListings fails the test where got (ListingsOf after the index lost
// its values) differs from want (before), or where want does not list
// what LoadFinished(dead) and LoadFinished(delivered) stored.
func SameListings(tb testing.TB, want, got map[string][]string, dead, delivered int) {
	tb.Helper()
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if !slices.Equal(got[name], want[name]) {
			tb.Errorf("%s: %d listed without the index's values, %d with", name, len(got[name]), len(want[name]))
		}
	}
	if len(want["dlq all"]) != dead || len(want["replay all"]) != delivered || len(want["dlq source"]) != dead/4 ||
		len(want["dlq tenant"]) != dead/5 || len(want["replay tenant"]) != delivered/5 {
		tb.Errorf("the model lists %d dead, %d delivered, %d of src1, %d and %d of tenant2; want %d, %d, %d, %d, %d",
			len(want["dlq all"]), len(want["replay all"]), len(want["dlq source"]), len(want["dlq tenant"]), len(want["replay tenant"]),
			dead, delivered, dead/4, dead/5, delivered/5)
	}
}

// NothingPages are a DLQ page and a replay page of limit 50 whose filter
// matches nothing, each with the result LoadFinished gives the jobs it
// walks: each examines its whole scan budget (1000 index entries).
var NothingPages = []struct {
	Result storage.Result
	List   func(tb testing.TB, s storage.Store) error
}{
	{storage.Dead, func(tb testing.TB, s storage.Store) error {
		_, err := s.DLQList(tb.Context(), storage.DLQFilter{Type: "nothing", Limit: 50})
		return err
	}},
	{storage.Delivered, func(tb testing.TB, s storage.Store) error {
		_, err := s.ListDelivered(tb.Context(), storage.ReplayFilter{Type: "nothing", Limit: 50})
		return err
	}},
}
