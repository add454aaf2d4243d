package delivery

import (
	"errors"
	"testing"
	"time"
)

// TestBreakersOnChange: the hook hears an upstream's breaker open after
// the failures and close after a successful trial, named by scheme and
// host only; half-open is not reported; a later OnChange replaces the hook.
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
	fail := func() (int, error) { return 0, errors.New("transient") }
	for range 2 {
		_, _ = b.get(up).Execute(fail)
	}
	want := change{"http://127.0.0.1:9", true}
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
		if c != (change{"http://127.0.0.1:9", false}) {
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
	const up, name = "http://user:pw@127.0.0.1:9/hooks", "http://127.0.0.1:9"
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
