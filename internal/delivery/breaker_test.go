package delivery

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestBreakersOnChange: the hook hears an upstream's breaker open after
// the failures and close after a successful trial, named by BreakerName
// (no user info, no query); half-open is not reported; a later OnChange
// replaces the hook.
func TestBreakersOnChange(t *testing.T) {
	b := NewBreakers(2, 50*time.Millisecond, nil)
	type change struct {
		upstream string
		open     bool
	}
	got := make(chan change, 10)
	b.OnChange(func(string, bool) { t.Error("the replaced hook was called") })
	b.OnChange(func(u string, open bool) { got <- change{u, open} })
	const up = "http://user:pw@127.0.0.1:9/hooks?x=1"
	name := BreakerName(up)
	fail := func() (int, error) { return 0, errors.New("transient") }
	for range 2 {
		_, _ = b.get(up).Execute(fail)
	}
	want := change{name, true}
	select {
	case c := <-got:
		if c != want {
			t.Fatalf("change %+v, want %+v", c, want)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("no open reported")
	}
	time.Sleep(60 * time.Millisecond) // half-open: not reported
	if _, err := b.get(up).Execute(func() (int, error) { return 1, nil }); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-got:
		if c != (change{name, false}) {
			t.Fatalf("change %+v, want closed", c)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("no close reported")
	}
	select {
	case c := <-got:
		t.Fatalf("unexpected change %+v", c)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestBreakersStates: what caddy_webhooks_breaker_open reports: nothing
// before an upstream is tried, closed after a success, not closed while
// open and half-open, closed again after a successful trial.
func TestBreakersStates(t *testing.T) {
	b := NewBreakers(2, 50*time.Millisecond, nil)
	if s := b.States(); len(s) != 0 {
		t.Fatalf("states before any delivery: %v", s)
	}
	const up = "http://user:pw@127.0.0.1:9/hooks?token=x"
	name := BreakerName(up)
	ok := func() (int, error) { return 1, nil }
	fail := func() (int, error) { return 0, errors.New("transient") }
	_, _ = b.get(up).Execute(ok)
	if s := b.States(); len(s) != 1 || s[name] {
		t.Fatalf("after a success: %v", s)
	}
	for range 2 {
		_, _ = b.get(up).Execute(fail)
	}
	if s := b.States(); !s[name] {
		t.Fatalf("after the failures: %v, want open", s)
	}
	time.Sleep(60 * time.Millisecond)
	if s := b.States(); !s[name] {
		t.Fatalf("half-open: %v, want not closed", s)
	}
	if _, err := b.get(up).Execute(ok); err != nil {
		t.Fatal(err)
	}
	if s := b.States(); s[name] {
		t.Fatalf("after the trial: %v, want closed", s)
	}
}

// TestBreakerName: a breaker per destination (scheme, host and path),
// named by its scheme and host and a hash of its path: never the path
// itself, its user info, query or fragment (they may hold credentials,
// and the name reaches logs, metrics and events).
func TestBreakerName(t *testing.T) {
	for _, tc := range []struct{ upstream, want string }{
		{"http://127.0.0.1:9000/a", "http://127.0.0.1:9000#" + pathHash("/a")},
		{"https://user:secret@app.internal/hooks?token=s3cret#frag", "https://app.internal#" + pathHash("/hooks")},
		{"http://127.0.0.1:9000", "http://127.0.0.1:9000"},
		{"http://127.0.0.1:9000/", "http://127.0.0.1:9000"},
		{"::not a url", "(invalid upstream)"},
	} {
		if got := BreakerName(tc.upstream); got != tc.want {
			t.Errorf("BreakerName(%q) = %q, want %q", tc.upstream, got, tc.want)
		}
	}
	if BreakerName("http://h/a") == BreakerName("http://h/b") {
		t.Error("two paths of one host share a breaker")
	}
	const token = "T0000/B0000/XXXXXXXXXXXXXXXX"
	if name := BreakerName("https://hooks.example.com/services/" + token); strings.Contains(name, "services") || strings.Contains(name, "XXXX") {
		t.Errorf("the name shows the path: %s", name)
	}
}

func pathHash(p string) string {
	sum := sha256.Sum256([]byte(p))
	return hex.EncodeToString(sum[:4])
}

// TestBreakersNextTrial: an open breaker reports when its trial comes; a
// time past is not reported (nothing keeps the lease loop awake for a
// breaker no destination uses any more); none once it closes.
func TestBreakersNextTrial(t *testing.T) {
	const open = 80 * time.Millisecond
	b := NewBreakers(1, open, nil)
	if _, ok := b.NextTrial(); ok {
		t.Fatal("a trial time before any breaker opened")
	}
	before := time.Now()
	_, _ = b.get("http://h/a").Execute(func() (int, error) { return 0, errors.New("transient") })
	next, ok := b.NextTrial()
	if !ok || next.Before(before.Add(open)) || next.After(time.Now().Add(open)) {
		t.Fatalf("NextTrial = %v, %v; want about %v from now", next, ok, open)
	}
	time.Sleep(open + 10*time.Millisecond)
	if next, ok := b.NextTrial(); ok {
		t.Fatalf("NextTrial = %v after it passed, want none", next)
	}
	if _, err := b.get("http://h/a").Execute(func() (int, error) { return 1, nil }); err != nil {
		t.Fatal(err)
	}
	if next, ok := b.NextTrial(); ok {
		t.Fatalf("NextTrial = %v with every breaker closed", next)
	}
}
