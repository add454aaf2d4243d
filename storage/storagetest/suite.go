// Package storagetest is the conformance suite of storage.Store. Every
// backend runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		storagetest.Run(t, storagetest.Factory{Open: ..., Reopen: ...})
//	}
//
// The suite uses nothing but the storage.Store interface. Times it passes
// to Lease, DLQRetry, DLQSetStatus, Replay and Cleanup are derived from time.Now,
// so the backend's own clock (used by Enqueue and Finish) must be the wall
// clock of the test process (give or take a few milliseconds). Due times
// are compared with a tolerance of one millisecond; event and attempt
// fields must round-trip exactly.
package storagetest

import (
	"bytes"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/storage"
)

// Factory opens stores for the suite.
type Factory struct {
	// Open returns a fresh, empty store. It registers the store's cleanup
	// (Close, removing files or keys) with t.Cleanup.
	Open func(t *testing.T) storage.Store
	// Reopen closes s and opens the same data again (durability checks).
	// For a shared backend it can just make a new client. Nil skips the
	// durability test.
	Reopen func(t *testing.T, s storage.Store) storage.Store
	// Dump returns everything s stores, as byte strings (each key, and
	// each value: a hash's fields and values, a list's or a set's
	// members), for the checks that an event's payload is stored once and
	// goes with its last delivery. Nil skips those checks.
	Dump func(t *testing.T, s storage.Store) [][]byte
	// Second, if set, opens a second client of s's data while s stays
	// open (a shared backend: another node); nil uses s twice.
	Second func(t *testing.T, s storage.Store) storage.Store
	// Uncounted closes s, rewrites its data as a version without the
	// counters of QueueByLane and DLQCounts left it (none kept), and opens
	// it again: the counters must be rebuilt, exact. Required when the
	// backend is a storage.Recounter.
	Uncounted func(t *testing.T, s storage.Store) storage.Store
	// Legacy, if set, writes a pause of source as earlier versions did
	// (the legacy-record test is skipped without it).
	Legacy func(t *testing.T, s storage.Store, source string)
	// ProcessLeases says the backend keeps its leases in the process that
	// took them (the embedded store: one process at a time opens its
	// file). Reopen and Uncounted, which stand for a restart, end them:
	// the jobs leased before are queued again at once, and a Finish under
	// such a lease finds it lost. Without it, leases are in the store and
	// outlive a reopen until they run out.
	ProcessLeases bool
	// LonePayload says the backend stores the payload of an event with
	// one delivery apart from its job's JSON, encoded as a payload record
	// (storage.SharePayload's lone: a record of its own, or a field of the
	// job's), for the checks that count payload records.
	LonePayload bool
}

// Run runs the conformance suite, each subtest on a fresh store.
func Run(t *testing.T, f Factory) {
	t.Helper()
	if f.Open == nil {
		t.Fatal("storagetest: Factory.Open is nil")
	}
	tests := []struct {
		name string
		run  func(*testing.T, Factory)
	}{
		{"EnqueueLease", testEnqueueLease},
		{"DedupeConcurrent", testDedupeConcurrent},
		{"DedupeScope", testDedupeScope},
		{"DedupeWindow", testDedupeWindow},
		{"DuplicateStatus", testDuplicateStatus},
		{"LeaseLimit", testLeaseLimit},
		{"LeaseExpiry", testLeaseExpiry},
		{"LeaseConcurrent", testLeaseConcurrent},
		{"LeaseFinishConcurrent", testLeaseFinishConcurrent},
		{"LeaseNamed", testLeaseNamed},
		{"RetryOrder", testRetryOrder},
		{"Release", testRelease},
		{"AttemptHistory", testAttemptHistory},
		{"Counts", testCounts},
		{"CountersExact", testCountersExact},
		{"CountersRebuilt", testCountersRebuilt},
		{"DLQEntry", testDLQEntry},
		{"DLQList", testDLQList},
		{"DLQListBounded", testDLQListBounded},
		{"DLQListArrivals", testDLQListArrivals},
		{"DLQRetry", testDLQRetry},
		{"RequeueZeroDue", testRequeueZeroDue},
		{"DLQSetStatus", testDLQSetStatus},
		{"Retention", testRetention},
		{"LookupAfterClaimExpiry", testLookupAfterClaimExpiry},
		{"DLQRetryAfterRetention", testDLQRetryAfterRetention},
		{"Paused", testPaused},
		{"PauseExpiry", testPauseExpiry},
		{"PauseLegacy", testPauseLegacy},
		{"Stats", testStats},
		{"StatsBuckets", testStatsBuckets},
		{"StatsGauges", testStatsGauges},
		{"StatsNodes", testStatsNodes},
		{"StatsBatch", testStatsBatch},
		{"QueueHeads", testQueueHeads},
		{"DLQCounts", testDLQCounts},
		{"QueueBySource", testQueueBySource},
		{"Durability", testDurability},
		{"CancelledContext", testCancelledContext},
		{"GateSkip", testGateSkip},
		{"GateFair", testGateFair},
		{"GatePace", testGatePace},
		{"GatePaceEveryLane", testGatePaceEveryLane},
		{"GateCap", testGateCap},
		{"ReplayList", testReplayList},
		{"ReplayListBounded", testReplayListBounded},
		{"ReplayListArrivals", testReplayListArrivals},
		{"Replay", testReplay},
		{"ReplayConcurrent", testReplayConcurrent},
		{"ReplayLane", testReplayLane},
		{"FanOut", testFanOut},
		{"FanOutWithoutProviderID", testFanOutWithoutProviderID},
		{"FanOutDead", testFanOutDead},
		{"FanOutReplay", testFanOutReplay},
		{"FanOutGate", testFanOutGate},
		{"FanOutRetention", testFanOutRetention},
		{"FanOutDurability", testFanOutDurability},
		{"FanOutBeforeLease", testFanOutBeforeLease},
		{"PayloadOnce", testPayloadOnce},
		{"PayloadCleanup", testPayloadCleanup},
		{"PayloadDead", testPayloadDead},
		{"PayloadReplay", testPayloadReplay},
		{"PayloadOrdered", testPayloadOrdered},
		{"OrderedKeys", testOrderedKeys},
		{"OrderedRetry", testOrderedRetry},
		{"OrderedLeaseExpiry", testOrderedLeaseExpiry},
		{"OrderedDeadBlock", testOrderedDeadBlock},
		{"OrderedDeadSettled", testOrderedDeadSettled},
		{"OrderedDeadSkip", testOrderedDeadSkip},
		{"OrderedFanOut", testOrderedFanOut},
		{"OrderedCleanup", testOrderedCleanup},
		{"OrderedConcurrent", testOrderedConcurrent},
		{"OrderedLookup", testOrderedLookup},
		{"EraseOne", testEraseOne},
		{"EraseWithoutProviderID", testEraseWithoutProviderID},
		{"EraseFanOut", testEraseFanOut},
		{"EraseDeadEntries", testEraseDeadEntriesOnly},
		{"EraseInFlight", testEraseInFlight},
		{"EraseOrdered", testEraseOrdered},
		{"EraseClaimExpiry", testEraseClaimExpiry},
		{"ListEvents", testListEvents},
		{"ListedWhileEntryKept", testListedWhileEntryKept},
		{"RetriedPastRetention", testRetriedPastRetention},
		{"DLQRetentionShorter", testDLQRetentionShorter},
		{"FoundByProviderIDWhileEntryKept", testFoundByProviderIDWhileEntryKept},
		{"ProviderIDTakenAgain", testProviderIDTakenAgain},
		{"ListByTenant", testListByTenant},
		{"EraseBatch", testEraseBatch},
		{"TenantErasureLive", testTenantErasureLive},
		{"FairTenants", testFairTenants},
		{"TenantApart", testTenantApart},
		{"EraseTenant", testEraseTenant},
		{"SealedAtRest", testSealedAtRest},
		{"SealedKeyMissing", testSealedKeyMissing},
		{"Rekey", testRekey},
		{"RekeyResume", testRekeyResume},
		{"RekeyUnderTraffic", testRekeyUnderTraffic},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, f) })
	}
}

// tolerance for due, lease and operator times, which a backend may keep
// with millisecond precision.
const tolerance = time.Millisecond

// ---------------------------------------------------------------- helpers

var bodySeq, typeSeq atomic.Int64

func newID(t testing.TB) string {
	t.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatalf("uuid: %v", err)
	}
	return id.String()
}

// NewEvent is a small deduplicated event for a backend's own tests: a
// fresh ID, the source and event ID given, a one-field JSON body, an
// upstream nothing listens on.
func NewEvent(source, eventID string) *storage.Event {
	return &storage.Event{ID: uuid.NewString(), EventID: eventID, Dedupe: true, Source: source,
		Upstream: "http://127.0.0.1:1/", Body: []byte(`{"n":1}`), ReceivedAt: time.Now()}
}

// newEvent is the suite's event: deduplicated, with a type, headers and a
// distinct body, so that round trips are checked on every field; an
// empty eventID makes a unique one. Types alternate between two per
// source.
func newEvent(t testing.TB, source, eventID string) *storage.Event {
	t.Helper()
	id := newID(t)
	if eventID == "" {
		eventID = "evt_" + id
	}
	return &storage.Event{
		ID:       id,
		EventID:  eventID,
		Dedupe:   true,
		Source:   source,
		Upstream: "http://127.0.0.1:8080/hooks/" + source,
		Headers: http.Header{
			"Content-Type": {"application/json"},
			"X-Request-Id": {id},
		},
		Type:       fmt.Sprintf("%s.type_%d", source, typeSeq.Add(1)%2),
		RequestID:  "req-" + id,
		Body:       fmt.Appendf(nil, `{"id":%q,"seq":%d}`, eventID, bodySeq.Add(1)),
		ReceivedAt: time.Now().Round(0),
	}
}

func cloneEvent(ev *storage.Event) storage.Event {
	c := *ev
	c.Body = bytes.Clone(ev.Body)
	c.Headers = ev.Headers.Clone()
	return c
}

func attempt(n int, at time.Time, status int, err string) *storage.Attempt {
	return &storage.Attempt{N: n, At: at.Round(0), Status: status, Duration: time.Duration(n)*time.Millisecond + 12345, Error: err}
}

func enqueue(t testing.TB, s storage.Store, ev *storage.Event, until time.Time) storage.EnqueueResult {
	t.Helper()
	res, err := s.Enqueue(t.Context(), ev, until)
	if err != nil {
		t.Fatalf("Enqueue(%s/%s): %v", ev.Source, ev.EventID, err)
	}
	return res
}

func mustEnqueue(t testing.TB, s storage.Store, ev *storage.Event, until time.Time) {
	t.Helper()
	res := enqueue(t, s, ev, until)
	if res.Duplicate || res.ID != ev.ID || res.Status != storage.StatusQueued {
		t.Fatalf("Enqueue(%s/%s) = %+v, want stored as %s, queued", ev.Source, ev.EventID, res, ev.ID)
	}
}

func lease(t testing.TB, s storage.Store, now time.Time, n int, d time.Duration) []*storage.Job {
	t.Helper()
	jobs, err := s.Lease(t.Context(), now, n, d, nil)
	if err != nil {
		t.Fatalf("Lease: %v", err)
	}
	if len(jobs) > max(n, 0) {
		t.Fatalf("Lease(n=%d) returned %d jobs", n, len(jobs))
	}
	for _, j := range jobs {
		if !closeTo(j.LeaseUntil, now.Add(d)) || j.Lease == "" {
			t.Fatalf("leased job %s: lease %q until %v, want a token until %v", j.ID, j.Lease, j.LeaseUntil, now.Add(d))
		}
	}
	return jobs
}

// leaseOne leases at now and expects exactly the job id.
func leaseOne(t testing.TB, s storage.Store, now time.Time, d time.Duration, id string) *storage.Job {
	t.Helper()
	jobs := lease(t, s, now, 10, d)
	if len(jobs) != 1 || jobs[0].ID != id {
		t.Fatalf("Lease = %v, want [%s]", jobIDs(jobs), id)
	}
	return jobs[0]
}

// leaseOneOf leases every due job, keeps id leased and releases the others.
func leaseOneOf(t testing.TB, s storage.Store, id string) *storage.Job {
	t.Helper()
	var found *storage.Job
	for _, j := range lease(t, s, time.Now(), 1000, time.Minute) {
		if j.ID == id {
			found = j
			continue
		}
		finish(t, s, j, storage.Outcome{Result: storage.Release})
	}
	if found == nil {
		t.Fatalf("job %s not due", id)
	}
	return found
}

func finish(t testing.TB, s storage.Store, job *storage.Job, out storage.Outcome) {
	t.Helper()
	if err := s.Finish(t.Context(), job, out); err != nil {
		t.Fatalf("Finish(%s, result %d): %v", job.ID, out.Result, err)
	}
}

func lookup(t testing.TB, s storage.Store, source, eventID string) *storage.EventInfo {
	t.Helper()
	info, err := s.Lookup(t.Context(), source, eventID)
	if err != nil {
		t.Fatalf("Lookup(%s, %s): %v", source, eventID, err)
	}
	return info
}

func dlqGet(t testing.TB, s storage.Store, id string) *storage.DLQEntry {
	t.Helper()
	e, err := s.DLQGet(t.Context(), id)
	if err != nil {
		t.Fatalf("DLQGet(%s): %v", id, err)
	}
	return e
}

// listAll pages through a listing and checks that no entry is listed twice.
func listAll(t testing.TB, s storage.Store, f storage.DLQFilter) []storage.DLQPage {
	t.Helper()
	var pages []storage.DLQPage
	seen := map[string]bool{}
	for {
		if len(pages) > 1000 {
			t.Fatal("DLQList pagination does not end")
		}
		p, err := s.DLQList(t.Context(), f)
		if err != nil {
			t.Fatalf("DLQList(%+v): %v", f, err)
		}
		if len(p.Entries) > f.EffectiveLimit() {
			t.Fatalf("DLQList returned %d entries, limit %d", len(p.Entries), f.EffectiveLimit())
		}
		for _, e := range p.Entries {
			if seen[e.ID] {
				t.Fatalf("entry %s listed twice", e.ID)
			}
			seen[e.ID] = true
		}
		pages = append(pages, p)
		if p.NextCursor == "" {
			return pages
		}
		if p.NextCursor == f.Cursor {
			t.Fatalf("DLQList returned the cursor it was given: %q", f.Cursor)
		}
		f.Cursor = p.NextCursor
	}
}

func wantCounts(t testing.TB, s storage.Store, want storage.Counts) {
	t.Helper()
	got, err := s.Counts(t.Context())
	if err != nil {
		t.Fatalf("Counts: %v", err)
	}
	if got != want {
		t.Errorf("Counts = %+v, want %+v", got, want)
	}
}

func checkInfo(t testing.TB, info *storage.EventInfo, ev storage.Event, status storage.Status) {
	t.Helper()
	if info.ID != ev.ID || info.EventID != ev.EventID || info.Source != ev.Source || info.EventType != ev.Type ||
		info.Tenant != ev.Tenant || info.Status != status || !info.ReceivedAt.Equal(ev.ReceivedAt) {
		t.Errorf("Lookup = %s %s %s %q %q %s %v, want %s %s %s %q %q %s %v",
			info.ID, info.EventID, info.Source, info.EventType, info.Tenant, info.Status, info.ReceivedAt,
			ev.ID, ev.EventID, ev.Source, ev.Type, ev.Tenant, status, ev.ReceivedAt)
	}
}

func checkEvent(t testing.TB, what string, got, want storage.Event) {
	t.Helper()
	if !eventEqual(got, want) {
		t.Errorf("%s differs from the enqueued event:\n got %s\nwant %s", what, fmtEvent(got), fmtEvent(want))
	}
}

func eventEqual(a, b storage.Event) bool {
	return a.ID == b.ID && a.EventID == b.EventID && a.Dedupe == b.Dedupe &&
		a.Source == b.Source && a.Type == b.Type && a.Tenant == b.Tenant && a.RequestID == b.RequestID && a.Upstream == b.Upstream &&
		headersEqual(a.Headers, b.Headers) && bytes.Equal(a.Body, b.Body) &&
		a.ReceivedAt.Equal(b.ReceivedAt)
}

func fmtEvent(ev storage.Event) string {
	body := ev.Body
	if len(body) > 64 {
		body = body[:64]
	}
	return fmt.Sprintf("id=%s event_id=%q dedupe=%v source=%q type=%q tenant=%q upstream=%q headers=%v received_at=%v body(%d)=%q",
		ev.ID, ev.EventID, ev.Dedupe, ev.Source, ev.Type, ev.Tenant, ev.Upstream, ev.Headers, ev.ReceivedAt, len(ev.Body), body)
}

func headersEqual(a, b http.Header) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func attemptsEqual(t testing.TB, what string, got, want []storage.Attempt) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		g, w := got[i], want[i]
		ok = g.N == w.N && g.At.Equal(w.At) && g.Status == w.Status && g.Duration == w.Duration && g.Error == w.Error
	}
	if !ok {
		t.Errorf("%s: attempts\n got %+v\nwant %+v", what, got, want)
	}
}

func closeTo(a, b time.Time) bool {
	d := a.Sub(b)
	return d >= -tolerance && d <= tolerance
}

func jobIDs(jobs []*storage.Job) []string {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
