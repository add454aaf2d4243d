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
// expired pause is gone at the next refresh and its deliveries get the
// catch-up pace where the destination has no rate_limit of its own.
func TestPausesInTheApp(t *testing.T) {
	app, err := provisionApp(t, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Cleanup() })
	own := storage.Rate{Events: 5, Per: time.Second}
	if err := app.RegisterSource(&Source{Name: "shop", Destinations: map[string]delivery.Target{
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
	if a, _ := app.resolve("shop", "a"); a.Rate != storage.DefaultCatchUpRate {
		t.Errorf("resumed destination a paced at %+v, want the catch-up rate", a.Rate)
	}
	if b, _ := app.resolve("shop", "b"); b.Rate != own {
		t.Errorf("destination b paced at %+v, want its own rate", b.Rate)
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
