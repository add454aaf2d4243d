package ingress

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

func TestGuard(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	g := newGuard(3, time.Minute, 5*time.Minute)
	steps := []struct {
		at          time.Duration
		ip          string
		fail        bool // record a failure (else just check)
		wantStarts  bool
		wantBlocked bool
	}{
		{0, "a", true, false, false},
		{time.Second, "a", true, false, false},
		{2 * time.Second, "b", true, false, false}, // another client counts apart
		{3 * time.Second, "a", true, true, true},   // third failure in the window: blocked
		{4 * time.Second, "b", false, false, false},
		{5*time.Minute + 2*time.Second, "a", false, false, true},  // still cooling down
		{5*time.Minute + 4*time.Second, "a", false, false, false}, // cool-down over
		// failures spread over more than the window never block
		{10 * time.Minute, "c", true, false, false},
		{11 * time.Minute, "c", true, false, false},
		{12 * time.Minute, "c", true, false, false},
		{12*time.Minute + time.Second, "c", false, false, false},
	}
	for i, s := range steps {
		now := t0.Add(s.at)
		if s.fail {
			if got := g.fail(s.ip, now); got != s.wantStarts {
				t.Errorf("step %d: fail() = %v, want %v", i, got, s.wantStarts)
			}
		}
		left, blocked := g.blocked(s.ip, now)
		if blocked != s.wantBlocked {
			t.Errorf("step %d: blocked = %v (%s left), want %v", i, blocked, left, s.wantBlocked)
		}
	}
	g2 := newGuard(1, time.Minute, 5*time.Minute)
	g2.fail("a", t0)
	if left, _ := g2.blocked("a", t0.Add(time.Second)); left != 5*time.Minute-time.Second {
		t.Errorf("cool-down left %s, want 4m59s", left)
	}
	// a nil guard (block_failures off) never blocks
	var off *guard
	if off.fail("x", t0) {
		t.Error("nil guard blocked")
	}
	if _, b := off.blocked("x", t0); b {
		t.Error("nil guard reports blocked")
	}
}

func TestGuardBoundedMemory(t *testing.T) {
	g := newGuard(5, time.Minute, time.Minute)
	now := time.Unix(1_700_000_000, 0)
	for i := range guardMaxClients + 100 {
		g.fail(string(rune(i)), now)
	}
	if n := len(g.clients); n > guardMaxClients {
		t.Fatalf("guard holds %d clients, cap %d", n, guardMaxClients)
	}
	// after the window, the sweep frees them
	g.fail("new", now.Add(2*time.Minute))
	if n := len(g.clients); n != 1 {
		t.Fatalf("after the window the guard holds %d clients, want 1", n)
	}
}

// provisionSource provisions a webhook_ingress in a config of its own (as
// a reload does: each config gets its own app and handlers).
func provisionSource(t *testing.T, raw string) *Ingress {
	t.Helper()
	h, err := loadSource(t, raw)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// loadSource provisions a source from its JSON config, with a webhooks app
// on an embedded store of the test's own.
func loadSource(t *testing.T, raw string) (*Ingress, error) {
	t.Helper()
	apps := caddy.ModuleMap{"webhooks": json.RawMessage(`{"storage":{"module":"embedded","path":` +
		strconv.Quote(filepath.Join(t.TempDir(), "events.db")) + `}}`)}
	ctx, err := caddy.ProvisionContext(&caddy.Config{AppsRaw: apps})
	if err != nil {
		t.Fatal(err)
	}
	mod, err := ctx.LoadModuleByID("http.handlers.webhook_ingress", json.RawMessage(raw))
	if err != nil {
		return nil, err
	}
	return mod.(*Ingress), nil
}

// TestGuardSharedAcrossReloads: a reload (a new provision of the same
// source) keeps the guard, so a client's block survives it; changed guard
// settings get a fresh guard; Cleanup releases the reference.
func TestGuardSharedAcrossReloads(t *testing.T) {
	const cfg = `{"source":"reloaded","verify":{"scheme":"none"},"forward_to":"http://127.0.0.1:1/","block_failures":{"failures":2,"window":60000000000,"cooldown":300000000000}}`
	old := provisionSource(t, cfg)
	now := time.Now()
	old.guard.fail("203.0.113.9", now)
	if !old.guard.fail("203.0.113.9", now) {
		t.Fatal("client not blocked after 2 failures")
	}
	// the reload: the new config is provisioned, then the old one cleaned up
	reloaded := provisionSource(t, cfg)
	key := reloaded.guardKey
	if n, _ := guardPool.References(key); n != 2 {
		t.Fatalf("references while both configs live: %d, want 2", n)
	}
	if err := old.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if n, _ := guardPool.References(key); n != 1 {
		t.Fatalf("references after the old config's cleanup: %d, want 1", n)
	}
	if _, blocked := reloaded.guard.blocked("203.0.113.9", now.Add(time.Second)); !blocked {
		t.Fatal("the reload lifted the block")
	}
	// other guard settings: a fresh guard
	changed := provisionSource(t, strings.Replace(cfg, `"failures":2`, `"failures":3`, 1))
	if changed.guard == reloaded.guard {
		t.Fatal("changed settings share the old guard")
	}
	if _, blocked := changed.guard.blocked("203.0.113.9", now.Add(time.Second)); blocked {
		t.Fatal("changed settings inherited the block")
	}
	// another source with the same settings: its own guard
	other := provisionSource(t, strings.Replace(cfg, `"reloaded"`, `"other"`, 1))
	if other.guard == reloaded.guard {
		t.Fatal("two sources share a guard")
	}
	for _, h := range []*Ingress{reloaded, changed, other} {
		k := h.guardKey
		if err := h.Cleanup(); err != nil {
			t.Fatal(err)
		}
		if n, ok := guardPool.References(k); n != 0 || ok {
			t.Fatalf("%s: references after cleanup: %d (in pool: %v)", h.Source, n, ok)
		}
	}
	// a second Cleanup (after a failed provision, say) must not panic
	if err := reloaded.Cleanup(); err != nil {
		t.Fatal(err)
	}
	// block_failures off: no guard, nothing pooled
	if off := provisionSource(t, `{"source":"off","verify":{"scheme":"none"},"forward_to":"http://127.0.0.1:1/","block_failures":{"off":true}}`); off.guard != nil || off.guardKey != "" {
		t.Fatal("block_failures off still has a guard")
	}
}
