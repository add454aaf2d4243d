package webhooks

import (
	"errors"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/storage"
)

// TestPausesInTheApp: a source's pause holds all its deliveries, a
// destination's only its own; an unknown destination is refused; an
// expired pause is gone at the next refresh and its deliveries catch up
// (the dispatcher's decide keeps a destination's own rate_limit then).
func TestPausesInTheApp(t *testing.T) {
	app, err := provisionApp(t, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Cleanup() })
	own := storage.Rate{Events: 5, Per: time.Second}
	if err := app.RegisterSource(&Source{Name: "shop", Destinations: map[string]delivery.Options{
		"a": {URL: "http://127.0.0.1:1/a"}, "b": {URL: "http://127.0.0.1:1/b", Rate: own}}}); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	p, _ := storage.NewPause("shop", "nope", false, "", 0, time.Now())
	if err := app.SetPause(ctx, p); !errors.Is(err, storage.ErrUnknownDestination) {
		t.Fatalf("pausing an unknown destination: %v", err)
	}
	p, _ = storage.NewPause("shop", "a", false, "a is down", 500*time.Millisecond, time.Now())
	if err := app.SetPause(ctx, p); err != nil {
		t.Fatal(err)
	}
	if !app.DeliveriesPaused("shop", "a") || app.DeliveriesPaused("shop", "b") || app.DeliveriesPaused("shop", "") {
		t.Fatal("a destination's pause must hold that destination only")
	}
	if _, ok := app.SourcePause("shop"); ok {
		t.Fatal("a destination's pause refuses at the ingress")
	}
	time.Sleep(time.Until(p.Until))
	if app.DeliveriesPaused("shop", "a") {
		t.Fatal("an expired pause still holds")
	}
	app.refreshNow()
	if ps := app.Pauses(); len(ps) != 0 {
		t.Fatalf("pauses after expiry: %+v", ps)
	}
	if st, _ := app.Store(); st != nil {
		if ps, err := st.Pauses(ctx); err != nil || len(ps) != 0 {
			t.Fatalf("the expired pause is still stored: %+v %v", ps, err)
		}
	}
	if !app.paused.CatchingUp("shop", "a") {
		t.Errorf("resumed destination a is not catching up")
	}
	if app.paused.CatchingUp("shop", "b") {
		t.Errorf("destination b, never paused, is catching up")
	}

	hold, _ := storage.NewPause("shop", "", true, "deploy", 0, time.Now())
	if err := app.SetPause(ctx, hold); err != nil {
		t.Fatal(err)
	}
	if got, ok := app.SourcePause("shop"); !ok || !got.Holds() || !app.DeliveriesPaused("shop", "b") {
		t.Fatalf("source hold: %+v %v", got, ok)
	}
	if got, ok, err := app.Resume(ctx, "shop", ""); err != nil || !ok || got.Reason != "deploy" || app.DeliveriesPaused("shop", "b") {
		t.Fatalf("resume: %+v %v %v", got, ok, err)
	}
}

// TestTenantPausesInTheApp: a tenant's pause holds that tenant's
// deliveries only (to every destination), is no source's pause, lists the
// tenant for the gate, names no destination, and its resume starts no
// catch-up pace; its alert names the tenant.
func TestTenantPausesInTheApp(t *testing.T) {
	app, err := provisionApp(t, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Cleanup() })
	ctx := t.Context()
	p, _ := storage.NewPause("shop", "a", true, "", 0, time.Now())
	p.Tenant = "big.myshopify.com"
	if err := app.SetPause(ctx, p); err == nil {
		t.Fatal("a tenant's pause naming a destination was accepted")
	}
	p, _ = storage.NewPause("shop", "", false, "abuse", 0, time.Now())
	p.Tenant = "big.myshopify.com"
	if err := app.SetPause(ctx, p); err != nil {
		t.Fatal(err)
	}
	if !app.TenantsPaused("shop") || app.TenantsPaused("other") {
		t.Error("TenantsPaused")
	}
	if got, ok := app.TenantPause("shop", "big.myshopify.com"); !ok || got.Holds() || got.Reason != "abuse" {
		t.Errorf("TenantPause = %+v, %v", got, ok)
	}
	if _, ok := app.TenantPause("shop", "small.myshopify.com"); ok {
		t.Error("another tenant is paused")
	}
	if _, ok := app.SourcePause("shop"); ok || app.DeliveriesPaused("shop", "") || len(app.PausedSources()) != 0 {
		t.Error("a tenant's pause holds its source")
	}
	if !app.paused.TenantPaused("shop", "big.myshopify.com") || app.paused.TenantPaused("shop", "") {
		t.Error("Holds.TenantPaused")
	}
	if got := app.paused.PausedTenants("shop"); len(got) != 1 || got[0] != "big.myshopify.com" {
		t.Errorf("PausedTenants = %q", got)
	}
	// a source's resume paces only what can drain: not what a tenant's
	// pause still holds
	lanes := map[string]storage.Counts{"shop": {Queued: 1}, storage.TenantLane("shop", "big.myshopify.com"): {Queued: 5},
		storage.TenantLane("shop", "small.myshopify.com"): {Queued: 2}}
	if got := storage.CountsOfDestination(app.withoutHeldTenants(lanes, "shop"), "shop", "").Queued; got != 3 {
		t.Errorf("waiting without the held tenant = %d, want 3", got)
	}
	if text := pauseAlertText(stepPaused, p, false); text != `:double_vertical_bar: hookline: tenant "big.myshopify.com" of source "shop" paused (refusing new events with 503): abuse.` {
		t.Errorf("alert text %q", text)
	}
	if got, ok, err := app.ResumeTenant(ctx, "shop", "big.myshopify.com"); err != nil || !ok || got.Tenant != "big.myshopify.com" {
		t.Fatalf("ResumeTenant = %+v, %v, %v", got, ok, err)
	}
	if app.TenantsPaused("shop") || app.paused.TenantPaused("shop", "big.myshopify.com") || app.paused.CatchingUp("shop", "") {
		t.Error("after the resume: still paused, or catching up")
	}
}
