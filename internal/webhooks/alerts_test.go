package webhooks

import (
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/spool"
)

func report(source string, res storage.Result, class delivery.Class) delivery.Report {
	return delivery.Report{Job: &storage.Job{Event: storage.Event{Source: source}}, Result: res, Class: class, Attempt: &storage.Attempt{N: 1}}
}

func texts(ms []alertMsg) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.text)
	}
	return out
}

func TestAlerterRules(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	al := newAlerter(AlertConfig{URL: "http://x", DLQThreshold: 2, SignatureFailures: 3,
		SignatureWindow: caddyDur(time.Minute), MinInterval: caddyDur(10 * time.Minute)},
		&App{log: zap.NewNop()}, time.Second)

	// one dead event: below the threshold
	al.noteResult(report("stripe", storage.Dead, delivery.Permanent))
	if msgs := al.check(t0); len(msgs) != 0 {
		t.Fatalf("alerts below threshold: %v", msgs)
	}
	// a second one: one alert naming the source and the count
	al.noteResult(report("stripe", storage.Dead, delivery.Permanent))
	msgs := texts(al.check(t0.Add(time.Second)))
	if len(msgs) != 1 || !strings.Contains(msgs[0], "2 event(s) entered the dead letter queue") || !strings.Contains(msgs[0], "stripe: 2") {
		t.Fatalf("DLQ alert: %v", msgs)
	}
	// an outage: many more dead events within min_interval give no alert...
	for range 50 {
		al.noteResult(report("stripe", storage.Dead, delivery.Permanent))
	}
	if msgs := texts(al.check(t0.Add(time.Minute))); len(msgs) != 0 {
		t.Fatalf("alert within min_interval: %v", msgs)
	}
	// ...and one summary after it
	msgs = texts(al.check(t0.Add(11 * time.Minute)))
	if len(msgs) != 1 || !strings.Contains(msgs[0], "50 event(s)") {
		t.Fatalf("summary after min_interval: %v", msgs)
	}

	// signature failures: 3 within the window alert once, per source
	for range 3 {
		al.noteSignatureFailure("github", t0)
	}
	al.noteSignatureFailure("shopify", t0)
	msgs = texts(al.check(t0.Add(2 * time.Second)))
	if len(msgs) != 1 || !strings.Contains(msgs[0], `"github"`) {
		t.Fatalf("signature alert: %v", msgs)
	}
	// failures spread beyond the window do not add up
	al.noteSignatureFailure("shopify", t0.Add(2*time.Minute))
	al.noteSignatureFailure("shopify", t0.Add(4*time.Minute))
	if msgs := texts(al.check(t0.Add(4 * time.Minute))); len(msgs) != 0 {
		t.Fatalf("spread failures alerted: %v", msgs)
	}

	// error rate: 3 of 4 attempts failed
	al = newAlerter(AlertConfig{URL: "http://x", ErrorRate: 0.5, ErrorMinAttempts: 4}, &App{log: zap.NewNop()}, time.Second)
	for _, c := range []delivery.Class{delivery.Transient, delivery.Transient, delivery.Success, delivery.Transient} {
		al.noteResult(report("paddle", storage.Retry, c))
	}
	msgs = texts(al.check(t0.Add(5 * time.Minute)))
	if len(msgs) != 1 || !strings.Contains(msgs[0], `3 of 4 deliveries for source "paddle"`) {
		t.Fatalf("error rate alert: %v", msgs)
	}
	// alerts about alert deliveries are never counted
	al.noteResult(report(alertSource, storage.Dead, delivery.Transient))
	if n := al.dead[alertSource]; n != 0 {
		t.Fatalf("alert deliveries counted: %d", n)
	}
}

func caddyDur(d time.Duration) caddy.Duration { return caddy.Duration(d) }

// TestSpoolAlerts: a start of spooling is alerted, rate-limited like every
// alert: one that must wait is alerted by the check once it may, if still
// on; an end is alerted exactly when its start was, so the last alert
// read tells the node's state; a start after quiet ones counts them; a
// reload's alerter (the same spool) goes on where the old one was; a
// spool an earlier run left says so.
func TestSpoolAlerts(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	cfg := AlertConfig{URL: "http://x", MinInterval: caddyDur(10 * time.Minute)}
	state := spoolAlertStateOf(t.TempDir())
	al := newAlerter(cfg, &App{log: zap.NewNop()}, time.Second)
	al.spool = state
	start := func(at time.Duration) spool.Change { return spool.Change{Spooling: true, Since: t0.Add(at), Events: 1} }
	end := func(since time.Duration, moved int64) spool.Change {
		return spool.Change{Since: t0.Add(since), Events: moved}
	}
	for i, step := range []struct {
		c     *spool.Change // nil: the check
		at    time.Duration
		want  string // "": no alert
		after func()
	}{
		{c: ptr(start(0)), want: "the store is unreachable (since 2023-11-14T22:13:20Z)"},
		{c: ptr(end(0, 40)), at: time.Minute, want: "the 40 event(s) spooled since 2023-11-14T22:13:20Z (1m0s) are in it"},
		{c: ptr(start(2 * time.Minute)), at: 2 * time.Minute}, // within MinInterval: waits
		{c: ptr(end(2*time.Minute, 3)), at: 3 * time.Minute},  // over before it was alerted: no end either
		{c: ptr(start(4 * time.Minute)), at: 4 * time.Minute}, // waits
		{at: 9 * time.Minute}, // the check: not yet
		{at: 10 * time.Minute, want: "(since 2023-11-14T22:17:20Z); events are accepted into this node's spool and delivered once it answers again (deliveries wait meanwhile). Watch: `caddy webhooks stats`. (1 earlier spooling period(s) since the last alert of this kind.)", // still on: alerted once it may, counting the one never alerted
			after: func() { al = newAlerter(cfg, &App{log: zap.NewNop()}, time.Second); al.spool = state }}, // a reload
		{at: 11 * time.Minute}, // alerted already
		{c: ptr(end(4*time.Minute, 7)), at: 12 * time.Minute, want: "the 7 event(s)"}, // the new alerter ends it
		{c: ptr(start(20 * time.Minute)), at: 20 * time.Minute, want: "(since 2023-11-14T22:33:20Z); events are accepted into this node's spool and delivered once it answers again (deliveries wait meanwhile). Watch: `caddy webhooks stats`."},
		{c: ptr(end(20*time.Minute, 1)), at: 21 * time.Minute, want: "the 1 event(s)"},
		{c: &spool.Change{Spooling: true, Earlier: true, Since: t0, Events: 9}, at: 40 * time.Minute,
			want: "started with 9 event(s) in its spool, spooled since 2023-11-14T22:13:20Z by an earlier run"},
	} {
		var text string
		var ok bool
		if step.c != nil {
			text, _, ok = al.spoolAlert(*step.c, t0.Add(step.at))
		} else {
			al.spool.mu.Lock()
			if al.spool.pending {
				text, ok = al.spoolStartText(t0.Add(step.at))
			}
			al.spool.mu.Unlock()
		}
		if ok != (step.want != "") || !strings.Contains(text, step.want) {
			t.Fatalf("step %d (%+v): alert %v %q, want %q", i, step.c, ok, text, step.want)
		}
		if step.after != nil {
			step.after()
		}
	}
}

func ptr[T any](v T) *T { return &v }
