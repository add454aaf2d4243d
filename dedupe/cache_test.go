package dedupe

import (
	"strconv"
	"testing"
	"time"
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
		key, status string
	}{
		{key: Key("github", "d-1"), status: "queued"},
		{key: Key("stripe", "evt_1"), status: "delivered"},
		{key: Key("", ""), status: "dead"},
	} {
		if _, ok := s.Get(tc.key); ok {
			t.Errorf("Test %d: %q found before Add", i, tc.key)
		}
		s.Add(tc.key, tc.status, time.Minute)
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
	s.Add(Key("github", "d-1"), "in_flight", time.Minute)
	s.Wait()
	if status, _ := s.Get(Key("github", "d-1")); status != "in_flight" {
		t.Errorf("after a second Add: status %q, expected in_flight", status)
	}
}

func TestSeenTTL(t *testing.T) {
	s := newSeen(t)
	short, long := Key("src", "short"), Key("src", "long")
	s.Add(short, "queued", 100*time.Millisecond)
	s.Add(long, "queued", time.Hour)
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
		s.Add(key, "queued", ttl)
		s.Wait()
		if status, ok := s.Get(key); ok {
			t.Errorf("Test %d: Add with TTL %v cached the key (status %q)", i, ttl, status)
		}
	}
}

func TestSeenUpdate(t *testing.T) {
	s := newSeen(t)
	cached, uncached := Key("src", "cached"), Key("src", "uncached")
	s.Add(cached, "queued", time.Minute)
	s.Wait()

	s.Update(cached, "delivered", time.Minute)
	s.Update(uncached, "delivered", time.Minute)
	s.Wait()
	if status, ok := s.Get(cached); !ok || status != "delivered" {
		t.Errorf("Get(cached) after Update = (%q, %v), expected (delivered, true)", status, ok)
	}
	if status, ok := s.Get(uncached); ok {
		t.Errorf("Update cached a key that was not cached (status %q)", status)
	}

	// Update sets a new TTL
	s.Update(cached, "dead", 100*time.Millisecond)
	s.Wait()
	if status, ok := s.Get(cached); !ok || status != "dead" {
		t.Errorf("Get(cached) after the second Update = (%q, %v), expected (dead, true)", status, ok)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		if _, ok := s.Get(cached); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the key is still there 3s after Update gave it a TTL of 100ms")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// and once expired it is not brought back
	s.Update(cached, "delivered", time.Minute)
	s.Wait()
	if _, ok := s.Get(cached); ok {
		t.Error("Update brought back an expired key")
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
	s.Add(Key("ab", "c"), "queued", time.Minute)
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
		s.Add(Key("src", strconv.Itoa(i)), "queued", time.Minute)
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
