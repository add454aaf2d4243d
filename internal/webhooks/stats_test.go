package webhooks

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestStatsTypesBounded: a source's event types are counted apart up to
// maxTypesPerSource; the ones past it are counted together as otherType,
// while a type already counted keeps its own counter.
func TestStatsTypesBounded(t *testing.T) {
	var b statsBuffer
	for i := range maxTypesPerSource + 10 {
		b.addType("src", "accepted", fmt.Sprintf("t%d", i), 1)
	}
	b.addType("src", "delivered", "t0", 1)
	b.addType("other-src", "accepted", "t999", 1) // another source has its own bound
	d := takeCounters(&b)
	if n := d["src"][operator.TypeCounter("accepted", otherType)]; n != 10 {
		t.Errorf("%s counted %d, want 10", otherType, n)
	}
	if n := d["src"][operator.TypeCounter("delivered", "t0")]; n != 1 {
		t.Errorf("delivered t0 counted %d, want 1", n)
	}
	if n := d["src"][operator.TypeCounter("accepted", fmt.Sprintf("t%d", maxTypesPerSource-1))]; n != 1 {
		t.Errorf("the last type within the bound counted %d, want 1", n)
	}
	if n := d["other-src"][operator.TypeCounter("accepted", "t999")]; n != 1 {
		t.Errorf("other source's type counted %d, want 1", n)
	}
	if got := len(d["src"]); got != maxTypesPerSource+2 { // the types, (other), delivered t0
		t.Errorf("%d counters, want %d", got, maxTypesPerSource+2)
	}
}

// takeCounters is the all-time counters of the buffer's next batch, the
// batch then written.
func takeCounters(b *statsBuffer) map[string]map[string]int64 {
	batch, _ := b.next(time.Now())
	b.written()
	return batch.Counters
}

// TestStatsLostReplyCountedOnce: a flush whose write took effect but whose
// answer was lost is written again under its batch ID, and the store
// applies it once: the counts are not doubled (they were, when the deltas
// were put back into the next flush). The time series' counters go to the
// windows only, never to the all-time totals.
func TestStatsLostReplyCountedOnce(t *testing.T) {
	st, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f := storagetest.NewFaulty(st)
	a := &App{stats: new(statsBuffer), log: zap.NewNop()}
	ctx := t.Context()

	a.Count("src", "accepted", 3)
	a.stats.add("src", operator.LatencyCounter(20*time.Millisecond), 3)
	f.LoseReply(storagetest.MethodAddStats)
	a.flushStats(ctx, f) // applied, its answer lost: pending
	f.ClearAll()
	a.Count("src", "accepted", 2)
	a.flushStats(ctx, f) // the pending batch again (applied already), then the 2
	if a.flushStats(ctx, f); a.stats.pending != nil {
		t.Fatal("a batch is still pending after the store answered")
	}
	recent, all, err := st.Stats(ctx, time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if n := all["src"]["accepted"]; n != 5 {
		t.Errorf("all-time accepted %d, want 5 (3 + 2, the lost reply's batch once)", n)
	}
	if n := recent["src"]["accepted"]; n != 5 {
		t.Errorf("last minute's accepted %d, want 5", n)
	}
	lat := operator.LatencyCounter(20 * time.Millisecond)
	if _, ok := all["src"][lat]; ok {
		t.Errorf("the all-time totals hold the time series' counter %s", lat)
	}
	if n := recent["src"][lat]; n != 3 {
		t.Errorf("the window's %s = %d, want 3", lat, n)
	}
}

// TestStatsNamesOutliveReloadAndRestart: the names counted apart are the
// store's, not one app instance's: a second instance (a reload) shares
// them, and an instance of a new process (a restart) is seeded from the
// all-time totals, so neither lets another bound's worth of types in.
func TestStatsNamesOutliveReloadAndRestart(t *testing.T) {
	var pooled statsNames
	first, reloaded := &statsBuffer{names: &pooled}, &statsBuffer{names: &pooled}
	for i := range maxTypesPerSource {
		first.addType("src", "accepted", fmt.Sprintf("t%d", i), 1)
	}
	reloaded.addType("src", "accepted", "new-after-reload", 1)
	if d := takeCounters(reloaded); d["src"][operator.TypeCounter("accepted", otherType)] != 1 {
		t.Errorf("after a reload a new type was counted apart: %v", d["src"])
	}

	// a restart: the all-time totals hold the bound's types
	all := map[string]map[string]int64{"src": {}}
	for i := range maxTypesPerSource {
		all["src"][operator.TypeCounter("accepted", fmt.Sprintf("t%d", i))] = 1
	}
	all["src"][operator.TypeCounter("accepted", otherType)] = 7
	all["src"]["accepted"] = 300
	var fresh statsNames
	fresh.seed(all)
	restarted := &statsBuffer{names: &fresh}
	restarted.addType("src", "accepted", "t5", 1)
	restarted.addType("src", "accepted", "new-after-restart", 1)
	d := takeCounters(restarted)
	if d["src"][operator.TypeCounter("accepted", "t5")] != 1 || d["src"][operator.TypeCounter("accepted", otherType)] != 1 {
		t.Errorf("after a restart: %v, want t5 counted apart and the new type as %s", d["src"], otherType)
	}
	fresh.seed(map[string]map[string]int64{"src": {operator.TypeCounter("accepted", "late"): 1}})
	if got := fresh.bounded(breakdownOf{"type", "src"}, "late", maxTypesPerSource); got != otherType {
		t.Error("a second seed admitted names: seeding is once per store")
	}
}

// TestStatsErrorNamesRenewed: error messages are counted in the windows
// only, so their bound is renewed once the windows have forgotten them:
// a process's first 32 messages do not hold it for good.
func TestStatsErrorNamesRenewed(t *testing.T) {
	var n statsNames
	of := breakdownOf{"error", "src"}
	for i := range maxErrorsPerSource {
		n.bounded(of, fmt.Sprintf("e%d", i), maxErrorsPerSource)
	}
	if got := n.bounded(of, "new", maxErrorsPerSource); got != otherType {
		t.Fatalf("past the bound: %q, want %s", got, otherType)
	}
	n.mu.Lock()
	n.errorsSince = time.Now().Add(-storage.StatsRetention - time.Minute)
	n.mu.Unlock()
	if got := n.bounded(of, "new", maxErrorsPerSource); got != "new" {
		t.Fatalf("after the windows forgot them: %q, want the message counted apart", got)
	}
	if got := n.bounded(breakdownOf{"type", "src"}, "t", maxTypesPerSource); got != "t" {
		t.Fatalf("types: %q", got)
	}
}
