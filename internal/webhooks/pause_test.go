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
