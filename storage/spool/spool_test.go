package spool_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/spool"
	"github.com/hookline/hookline/storage/storagetest"
)

func open(t *testing.T, dir string, opts spool.Options) *spool.Spool {
	t.Helper()
	s, err := spool.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestPutNextRemove: events come back whole (deliveries, headers, sealed
// bytes) in the order they were spooled, and go with Remove; Stats
// follows.
func TestPutNextRemove(t *testing.T) {
	ctx := t.Context()
	s := open(t, t.TempDir(), spool.Options{})
	if st := s.Stats(); st != (spool.Stats{}) || !s.Empty() {
		t.Fatalf("new spool: %+v", st)
	}
	a := storagetest.NewEvent("stripe", "evt_a")
	a.Headers = http.Header{"Stripe-Signature": {"t=1,v1=00"}}
	a.Deliveries = []storage.Delivery{{Destination: "billing", Upstream: "http://127.0.0.1:1/b", OrderKey: "cus_1", OrderSkip: true},
		{Destination: "crm", Upstream: "http://127.0.0.1:1/c"}}
	b := storagetest.NewEvent("github", "evt_b")
	b.Dedupe = false
	b.Body, b.Sealed = nil, []byte{0, 1, 2, 255}
	c := storagetest.NewEvent("stripe", "evt_c")
	until := time.Now().Add(time.Hour)
	var spooledAt []time.Time
	for _, ev := range []*storage.Event{a, b, c} {
		res, err := s.Put(ctx, ev, until)
		if err != nil || res.Duplicate || res.ID != ev.ID {
			t.Fatalf("Put %s: %+v, %v", ev.EventID, res, err)
		}
		spooledAt = append(spooledAt, res.SpooledAt)
	}
	st := s.Stats()
	if st.Events != 3 || st.Bytes <= 0 || !st.Oldest.Equal(spooledAt[0]) || s.Empty() {
		t.Fatalf("Stats = %+v, want 3 events since %v", st, spooledAt[0])
	}
	got, err := s.Next(10)
	if err != nil || len(got) != 3 {
		t.Fatalf("Next: %d, %v", len(got), err)
	}
	for i, want := range []*storage.Event{a, b, c} {
		e := got[i]
		if e.Err != nil || !e.DedupeUntil.Equal(until) || !e.SpooledAt.Equal(spooledAt[i]) {
			t.Fatalf("entry %d: %+v", i, e)
		}
		w := *want
		w.ReceivedAt, e.Event.ReceivedAt = time.Time{}, time.Time{} // monotonic reading dropped by encoding
		if !reflect.DeepEqual(*e.Event, w) {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, *e.Event, w)
		}
		if !e.Event.ReceivedAt.Equal(want.ReceivedAt) && !got[i].Event.ReceivedAt.IsZero() {
			t.Errorf("entry %d received at %v, want %v", i, got[i].Event.ReceivedAt, want.ReceivedAt)
		}
	}
	if got, _ := s.Next(2); len(got) != 2 || got[1].Event.EventID != "evt_b" {
		t.Fatalf("Next(2) = %+v", got)
	}
	if err := s.Remove(got[0].Seq, got[0].Seq, 12345); err != nil {
		t.Fatal(err)
	}
	st2 := s.Stats()
	if st2.Events != 2 || st2.Bytes >= st.Bytes || !st2.Oldest.Equal(spooledAt[1]) {
		t.Fatalf("after Remove: %+v", st2)
	}
	// the removed event's claim went with it
	if _, ok, err := s.Lookup("stripe", "evt_a", time.Now()); ok || err != nil {
		t.Fatalf("Lookup of a removed event: %v, %v", ok, err)
	}
	rest, _ := s.Next(10)
	var seqs []uint64
	for _, e := range rest {
		seqs = append(seqs, e.Seq)
	}
	if err := s.Remove(seqs...); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st != (spool.Stats{}) || !s.Empty() {
		t.Fatalf("emptied: %+v", st)
	}
}

// TestDuplicates: a resend of a spooled event whose claim holds is a
// duplicate naming the first; an expired claim, an event not deduplicated
// or a removed one are not; among concurrent resends one is spooled.
func TestDuplicates(t *testing.T) {
	ctx := t.Context()
	now := time.Now()
	clock := func() time.Time { return now }
	s := open(t, t.TempDir(), spool.Options{Now: func() time.Time { return clock() }})
	first := storagetest.NewEvent("stripe", "evt_1")
	if _, err := s.Put(ctx, first, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	again := storagetest.NewEvent("stripe", "evt_1")
	res, err := s.Put(ctx, again, now.Add(time.Minute))
	if err != nil || !res.Duplicate || res.ID != first.ID {
		t.Fatalf("resend: %+v, %v; want a duplicate of %s", res, err, first.ID)
	}
	if e, ok, err := s.Lookup("stripe", "evt_1", now); !ok || err != nil || e.Event.ID != first.ID {
		t.Fatalf("Lookup: %+v, %v, %v", e, ok, err)
	}
	other := storagetest.NewEvent("github", "evt_1") // another source
	if res, err := s.Put(ctx, other, now.Add(time.Minute)); err != nil || res.Duplicate {
		t.Fatalf("same id, other source: %+v, %v", res, err)
	}
	gen := storagetest.NewEvent("stripe", "evt_1")
	gen.Dedupe = false
	if res, err := s.Put(ctx, gen, now.Add(time.Minute)); err != nil || res.Duplicate {
		t.Fatalf("not deduplicated: %+v, %v", res, err)
	}
	clock = func() time.Time { return now.Add(2 * time.Minute) }
	late := storagetest.NewEvent("stripe", "evt_1")
	if res, err := s.Put(ctx, late, now.Add(time.Hour)); err != nil || res.Duplicate || res.ID != late.ID {
		t.Fatalf("after the claim expired: %+v, %v", res, err)
	}
	if e, ok, _ := s.Lookup("stripe", "evt_1", now.Add(2*time.Minute)); !ok || e.Event.ID != late.ID {
		t.Fatalf("the claim is the later event's: %+v, %v", e, ok)
	}
	// the first one's removal leaves the later one's claim
	all, _ := s.Next(10)
	if err := s.Remove(all[0].Seq); err != nil {
		t.Fatal(err)
	}
	if e, ok, _ := s.Lookup("stripe", "evt_1", now.Add(2*time.Minute)); !ok || e.Event.ID != late.ID {
		t.Fatalf("after the first one went: %+v, %v", e, ok)
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	spooled := 0
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Put(ctx, storagetest.NewEvent("shopify", "evt_race"), now.Add(time.Hour))
			if err != nil {
				t.Error(err)
				return
			}
			if !res.Duplicate {
				mu.Lock()
				spooled++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if spooled != 1 {
		t.Fatalf("32 concurrent resends spooled %d events, want 1", spooled)
	}
}

// TestFull: an event that would take the spool past MaxSize is ErrFull
// (a storage.ErrUnavailable: the ingress answers 503); space comes back
// with Remove.
func TestFull(t *testing.T) {
	ctx := t.Context()
	ev := func(id string) *storage.Event {
		e := storagetest.NewEvent("stripe", id)
		e.Body = make([]byte, 600)
		return e
	}
	// room for two and a half such events, measured on a spool of one
	probe := open(t, t.TempDir(), spool.Options{})
	if _, err := probe.Put(ctx, ev("evt_probe"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	max := probe.Stats().Bytes * 5 / 2
	s := open(t, t.TempDir(), spool.Options{MaxSize: max})
	for i := range 2 {
		if _, err := s.Put(ctx, ev(fmt.Sprint("evt_", i)), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.Put(ctx, ev("evt_full"), time.Now().Add(time.Hour))
	if !errors.Is(err, spool.ErrFull) || !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("Put into a full spool: %v, want ErrFull", err)
	}
	if st := s.Stats(); st.Events != 2 || st.Bytes > max {
		t.Fatalf("Stats = %+v", st)
	}
	got, _ := s.Next(1)
	if err := s.Remove(got[0].Seq); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, ev("evt_full"), time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("after a Remove: %v", err)
	}
}

// TestOneProcess: a second Open of a spool directory held open is
// refused, naming the directory; it opens once the first is closed, with
// what the first spooled.
func TestOneProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	s, err := spool.Open(dir, spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(t.Context(), storagetest.NewEvent("stripe", "evt_1"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if s2, err := spool.Open(dir, spool.Options{}); err == nil || !strings.Contains(err.Error(), dir) {
		if s2 != nil {
			s2.Close()
		}
		t.Fatalf("second Open: %v, want an error naming %s", err, dir)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(t.Context(), storagetest.NewEvent("stripe", "evt_2"), time.Now().Add(time.Hour)); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("Put after Close: %v", err)
	}
	s = open(t, dir, spool.Options{})
	if st := s.Stats(); st.Events != 1 || st.Oldest.IsZero() {
		t.Fatalf("reopened: %+v", st)
	}
}

// TestHelperSpoolWriter is the child of TestKill9: it spools events
// until it is killed, printing the id of each once Put returned.
func TestHelperSpoolWriter(t *testing.T) {
	dir := os.Getenv("HOOKLINE_SPOOL_CHILD")
	if dir == "" {
		t.Skip("the child of TestKill9 (run by it)")
	}
	s, err := spool.Open(dir, spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				ev := storagetest.NewEvent("stripe", fmt.Sprintf("evt_%d_%d", w, i))
				if _, err := s.Put(context.Background(), ev, time.Now().Add(time.Hour)); err != nil {
					panic(err)
				}
				mu.Lock()
				fmt.Println("spooled", ev.EventID)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// TestKill9: every event a Put confirmed is in the spool after the process
// is killed with SIGKILL, in the order confirmed per writer.
func TestKill9(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperSpoolWriter$", "-test.v")
	cmd.Env = append(os.Environ(), "HOOKLINE_SPOOL_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var confirmed []string
	sc := bufio.NewScanner(out)
	for sc.Scan() && len(confirmed) < 3000 {
		if id, ok := strings.CutPrefix(sc.Text(), "spooled "); ok {
			confirmed = append(confirmed, id)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if len(confirmed) < 3000 {
		t.Fatalf("the child confirmed %d events before it stopped", len(confirmed))
	}
	s := open(t, dir, spool.Options{})
	all, err := s.Next(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, e := range all {
		if e.Err != nil {
			t.Fatalf("entry %d: %v", e.Seq, e.Err)
		}
		have[e.Event.EventID] = true
	}
	var lost []string
	for _, id := range confirmed {
		if !have[id] {
			lost = append(lost, id)
		}
	}
	sort.Strings(lost)
	if len(lost) > 0 {
		t.Fatalf("%d of %d confirmed events lost by kill -9, such as %v", len(lost), len(confirmed), lost[:min(5, len(lost))])
	}
	if st := s.Stats(); st.Events != int64(len(all)) {
		t.Fatalf("Stats says %d events, the spool holds %d", st.Events, len(all))
	}
	t.Logf("%d confirmed, %d in the spool after kill -9", len(confirmed), len(all))
}

// TestTornLogTail: a log whose last write was cut short (a crash midway
// through it) opens with the events before it, in order, and a size
// that counts them.
func TestTornLogTail(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	s, err := spool.Open(dir, spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 20 {
		ev := storagetest.NewEvent("stripe", fmt.Sprint("evt_", i))
		if _, err := s.Put(t.Context(), ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.EventID)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	sort.Strings(logs)
	if len(logs) == 0 {
		t.Fatal("no log file")
	}
	last := logs[len(logs)-1]
	fi, err := os.Stat(last)
	if err != nil || fi.Size() < 100 {
		t.Fatalf("log %s: %v, %v", last, fi, err)
	}
	if err := os.Truncate(last, fi.Size()-40); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, spool.Options{})
	got, err := s.Next(100)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || len(got) >= 20 {
		t.Fatalf("%d events after the torn tail, want the first ones but not all 20", len(got))
	}
	for i, e := range got {
		if e.Err != nil || e.Event.EventID != ids[i] {
			t.Fatalf("entry %d: %+v, want %s", i, e, ids[i])
		}
	}
	if st := s.Stats(); st.Events != int64(len(got)) {
		t.Fatalf("Stats says %d events, %d are there", st.Events, len(got))
	}
	// the spool goes on after it
	if _, err := s.Put(t.Context(), storagetest.NewEvent("stripe", "evt_after"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedRecord: a record that does not decode is handed out with
// its error, not as an event, does not hide the others, and goes with
// Remove.
func TestDamagedRecord(t *testing.T) {
	s := open(t, t.TempDir(), spool.Options{})
	if err := s.PutRaw(0, []byte("{not json")); err != nil { // before the first sequence Put takes
		t.Fatal(err)
	}
	if _, err := s.Put(t.Context(), storagetest.NewEvent("stripe", "evt_1"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Next(10)
	if err != nil || len(got) != 2 {
		t.Fatalf("Next: %+v, %v", got, err)
	}
	if got[0].Seq != 0 || got[0].Err == nil || got[0].Event != nil {
		t.Fatalf("damaged entry: %+v", got[0])
	}
	if got[1].Err != nil || got[1].Event.EventID != "evt_1" {
		t.Fatalf("the next entry: %+v", got[1])
	}
	if err := s.Remove(0); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Next(10); len(got) != 1 || s.Stats().Events != 1 {
		t.Fatalf("after removing the damaged one: %+v, %+v", got, s.Stats())
	}
}
