package dedupe

import (
	"strconv"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

func newSeen(t *testing.T) *Seen {
	t.Helper()
	s, err := NewSeen(1000)
	if err != nil {
		t.Fatalf("NewSeen: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestSeenAddGet(t *testing.T) {
	s := newSeen(t)
	for i, tc := range []struct {
		key    string
		status storage.Status
	}{
		{key: Key("github", "d-1"), status: "queued"},
		{key: Key("stripe", "evt_1"), status: "delivered"},
		{key: Key("", ""), status: "dead"},
	} {
		if _, ok := s.Get(tc.key); ok {
			t.Errorf("Test %d: %q found before Add", i, tc.key)
		}
		s.Add(tc.key, tc.status, 1, time.Now().Add(time.Minute))
		s.Wait()
		status, ok := s.Get(tc.key)
		if !ok || status != tc.status {
			t.Errorf("Test %d: Get(%q) = (%q, %v), expected (%q, true)", i, tc.key, status, ok, tc.status)
		}
	}
	if _, ok := s.Get(Key("github", "d-2")); ok {
		t.Error("a key never added was found")
	}
	// Add overwrites
	s.Add(Key("github", "d-1"), "in_flight", 1, time.Now().Add(time.Minute))
	s.Wait()
	if status, _ := s.Get(Key("github", "d-1")); status != "in_flight" {
		t.Errorf("after a second Add: status %q, expected in_flight", status)
	}
}

func TestSeenTTL(t *testing.T) {
	s := newSeen(t)
	short, long := Key("src", "short"), Key("src", "long")
	s.Add(short, "queued", 1, time.Now().Add(100*time.Millisecond))
	s.Add(long, "queued", 1, time.Now().Add(time.Hour))
	s.Wait()
	if _, ok := s.Get(short); !ok {
		t.Fatal("the key is gone before its TTL")
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		if _, ok := s.Get(short); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the key is still there 3s after its 100ms TTL")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, ok := s.Get(long); !ok {
		t.Error("a key with a TTL of an hour expired along with the short one")
	}
}

func TestSeenIgnoresNonPositiveTTL(t *testing.T) {
	s := newSeen(t)
	for i, ttl := range []time.Duration{0, -time.Second} {
		key := Key("src", ttl.String())
		s.Add(key, "queued", 1, time.Now().Add(ttl))
		s.Wait()
		if status, ok := s.Get(key); ok {
			t.Errorf("Test %d: Add with TTL %v cached the key (status %q)", i, ttl, status)
		}
	}
}

func TestSeenUpdate(t *testing.T) {
	s := newSeen(t)
	cached, uncached := Key("src", "cached"), Key("src", "uncached")
	s.Add(cached, "queued", 1, time.Now().Add(time.Minute))
	s.Wait()

	s.Update(cached, "erased", time.Now().Add(time.Minute))
	s.Update(uncached, "erased", time.Now().Add(time.Minute))
	s.Wait()
	if status, ok := s.Get(cached); !ok || status != "erased" {
		t.Errorf("Get(cached) after Update = (%q, %v), expected (erased, true)", status, ok)
	}
	if status, ok := s.Get(uncached); ok {
		t.Errorf("Update cached a key that was not cached (status %q)", status)
	}
	// Update sets the claim's end the store reports
	s.Update(cached, "erased", time.Now().Add(100*time.Millisecond))
	s.Wait()
	waitGone(t, s, cached, "Update gave it a claim of 100ms")
	// and once expired it is not brought back
	s.Update(cached, "erased", time.Now().Add(time.Minute))
	s.Wait()
	if _, ok := s.Get(cached); ok {
		t.Error("Update brought back an expired key")
	}
	// a claim already over removes the key
	s.Add(cached, "queued", 1, time.Now().Add(time.Minute))
	s.Wait()
	s.Update(cached, "erased", time.Now().Add(-time.Second))
	s.Wait()
	if _, ok := s.Get(cached); ok {
		t.Error("Update with a claim already over kept the key")
	}
}

// waitGone waits up to 3s for key to leave the cache.
func waitGone(t *testing.T, s *Seen, key, why string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		if _, ok := s.Get(key); !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the key is still there 3s later: %s", why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSeenFinished: a delivery's result applied to the cache gives what
// the store answers for the event (storage.AggregateStatus of its
// deliveries'), or removes the entry so the store answers: an event of
// one delivery takes its result; a fan-out event (or one whose deliveries
// are not known) is dead at its first dead delivery, and a delivered one
// says nothing of the others. The claim's end never changes.
func TestSeenFinished(t *testing.T) {
	for _, tc := range []struct {
		name       string
		deliveries int
		results    []storage.Status
		want       storage.Status // "": not cached (the store answers)
	}{
		{name: "one delivery, delivered", deliveries: 1, results: []storage.Status{"delivered"}, want: "delivered"},
		{name: "one delivery, dead", deliveries: 1, results: []storage.Status{"dead"}, want: "dead"},
		{name: "one delivery, dead then delivered (a retry)", deliveries: 1, results: []storage.Status{"dead", "delivered"}, want: "delivered"},
		{name: "fan-out: billing dead, then crm delivered", deliveries: 2, results: []storage.Status{"dead", "delivered"}, want: ""},
		{name: "fan-out: crm delivered, then billing dead", deliveries: 2, results: []storage.Status{"delivered", "dead"}, want: ""},
		{name: "fan-out: dead", deliveries: 3, results: []storage.Status{"dead"}, want: "dead"},
		{name: "fan-out: one delivered", deliveries: 2, results: []storage.Status{"delivered"}, want: ""},
		{name: "deliveries not known: delivered", deliveries: 0, results: []storage.Status{"delivered"}, want: ""},
		{name: "deliveries not known: dead", deliveries: 0, results: []storage.Status{"dead"}, want: "dead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSeen(t)
			key := Key("src", "e")
			s.Add(key, "queued", tc.deliveries, time.Now().Add(time.Minute))
			s.Wait()
			for _, r := range tc.results {
				s.Finished(key, r)
				s.Wait()
			}
			got, ok := s.Get(key)
			if tc.want == "" && ok {
				t.Fatalf("cached %q, want the entry removed (the store answers)", got)
			}
			if tc.want != "" && (!ok || got != tc.want) {
				t.Fatalf("cached %q %v, want %q", got, ok, tc.want)
			}
		})
	}
	// the claim's end stays the one the entry was cached with
	s := newSeen(t)
	key := Key("src", "short")
	s.Add(key, "queued", 1, time.Now().Add(150*time.Millisecond))
	s.Wait()
	s.Finished(key, "delivered")
	s.Wait()
	waitGone(t, s, key, "a delivery result extended the claim")
	// a key not cached stays uncached
	s.Finished(Key("src", "never"), "dead")
	s.Wait()
	if _, ok := s.Get(Key("src", "never")); ok {
		t.Error("Finished cached a key that was not cached")
	}
	s.Add(key, "queued", 1, time.Now().Add(time.Minute))
	s.Wait()
	s.Forget(key)
	s.Wait()
	if _, ok := s.Get(key); ok {
		t.Error("Forget kept the key")
	}
}

func TestKey(t *testing.T) {
	for i, tc := range []struct {
		a, b [2]string
	}{
		{a: [2]string{"ab", "c"}, b: [2]string{"a", "bc"}},
		{a: [2]string{"", "abc"}, b: [2]string{"abc", ""}},
		{a: [2]string{"src", "id"}, b: [2]string{"src", "id2"}},
		{a: [2]string{"src", "id"}, b: [2]string{"src2", "id"}},
	} {
		ka, kb := Key(tc.a[0], tc.a[1]), Key(tc.b[0], tc.b[1])
		if ka == kb {
			t.Errorf("Test %d: Key%q and Key%q are both %q", i, tc.a, tc.b, ka)
		}
	}
	if Key("src", "id") != Key("src", "id") {
		t.Error("Key is not deterministic")
	}

	// the cache keeps them apart
	s := newSeen(t)
	s.Add(Key("ab", "c"), "queued", 1, time.Now().Add(time.Minute))
	s.Wait()
	if _, ok := s.Get(Key("a", "bc")); ok {
		t.Error(`("a", "bc") found after adding ("ab", "c")`)
	}
}

// NewSeen(n) holds about n keys: each key costs 1, whatever ristretto's
// own bookkeeping costs.
func TestSeenCapacity(t *testing.T) {
	const entries = 1000
	s, err := NewSeen(entries)
	if err != nil {
		t.Fatalf("NewSeen: %v", err)
	}
	defer s.Close()
	const added = entries / 2
	for i := range added {
		s.Add(Key("src", strconv.Itoa(i)), "queued", 1, time.Now().Add(time.Minute))
		s.Wait()
	}
	found := 0
	for i := range added {
		if _, ok := s.Get(Key("src", strconv.Itoa(i))); ok {
			found++
		}
	}
	if found < added*9/10 {
		t.Errorf("a cache for %d keys kept %d of %d", entries, found, added)
	}
}
