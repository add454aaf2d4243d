package integration

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

// deliverAll posts the bodies to source (through its ingress path) with
// ids prefix-0, prefix-1..., waits for each at the upstream, then until
// every one is delivered.
func deliverAll(t *testing.T, up *upstream, path, source, prefix string, bodies [][]byte) {
	t.Helper()
	for i, body := range bodies {
		if resp, m := post(t, path, body, signedHeaders(body, fmt.Sprintf("%s-%d", prefix, i))); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("post %d: %d %v", i, resp.StatusCode, m)
		}
	}
	for range bodies {
		up.next(t, 10*time.Second)
	}
	waitFor(t, func() bool {
		for i := range bodies {
			if _, ev := admin(t, "GET", fmt.Sprintf("/webhooks/events/%s/%s-%d", source, prefix, i), ""); ev["status"] != "delivered" {
				return false
			}
		}
		return true
	})
}

// replayedIDs are the event ids a replay answer names.
func replayedIDs(t *testing.T, m map[string]any) []string {
	t.Helper()
	list, ok := m["replayed"].([]any)
	if !ok {
		t.Fatalf("answer without replayed: %v", m)
	}
	var out []string
	for _, v := range list {
		ev := v.(map[string]any)
		if ev["id"] == "" || ev["id"] == nil {
			t.Errorf("replayed event without its internal id: %v", ev)
		}
		out = append(out, ev["event_id"].(string))
	}
	slices.Sort(out)
	return out
}

// TestReplay: of 5 delivered events of 2 types, a dry run by type names
// exactly those of the type and sends nothing; the real run sends exactly
// those again (the upstream sees the same bytes, X-Webhook-Attempt
// counting on), paced; they are delivered again; a destination that is
// not a destination name is refused, another one matches its deliveries
// only.
func TestReplay(t *testing.T) {
	up := newUpstream(t)
	startCaddy(t, up, "", "")
	var bodies [][]byte
	for i, kind := range []string{"a.created", "b.deleted", "a.created", "b.deleted", "a.created"} {
		bodies = append(bodies, []byte(fmt.Sprintf(`{"kind":%q,"n":%d}`, kind, i)))
	}
	deliverAll(t, up, "/hooks/gen", "gen", "rp", bodies)
	want := []string{"rp-0", "rp-2", "rp-4"}

	code, m := admin(t, "POST", "/webhooks/events/replay", `{"source":"gen","type":"a.created","dry_run":true}`)
	if code != 200 || m["matched"] != float64(3) || m["dry_run"] != true || !slices.Equal(replayedIDs(t, m), want) {
		t.Fatalf("dry run: %d %v", code, m)
	}
	up.none(t, 300*time.Millisecond) // a dry run changes nothing

	replayAt := time.Now()
	code, m = admin(t, "POST", "/webhooks/events/replay", `{"source":"gen","type":"a.created","since":"1h"}`)
	if code != 200 || m["matched"] != float64(3) || !slices.Equal(replayedIDs(t, m), want) || m["spread"] == nil || m["failed"] != nil {
		t.Fatalf("replay: %d %v", code, m)
	}
	var got []recorded
	for range want {
		got = append(got, up.next(t, 5*time.Second))
	}
	up.none(t, 500*time.Millisecond) // the other type is not sent again
	var sent []string
	for i, r := range got {
		if r.Header.Get("X-Webhook-Attempt") != "2" {
			t.Errorf("replayed request %d: X-Webhook-Attempt %q, want 2", i, r.Header.Get("X-Webhook-Attempt"))
		}
		id := r.Header.Get("Idempotency-Key")
		sent = append(sent, id)
		var n int
		if _, err := fmt.Sscanf(id, "rp-%d", &n); err != nil || n >= len(bodies) || !bytes.Equal(r.Body, bodies[n]) {
			t.Errorf("replayed request %d (%s): body %s, not the one first delivered", i, id, r.Body)
		}
	}
	if slices.Sort(sent); !slices.Equal(sent, want) {
		t.Errorf("replayed %v, want %v", sent, want)
	}
	// paced: due 100ms apart from the replay on (0, 100ms, 200ms), so the
	// second to arrive cannot leave before 100ms, nor the third before
	// 200ms (less a millisecond: due times are stored in ms). Measured
	// from the replay, not from the first arrival: on a loaded machine the
	// first may leave late, while the others are written.
	for i, due := range []time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond} {
		if after := got[i].At.Sub(replayAt); after < due-time.Millisecond {
			t.Errorf("replayed event %d arrived %s after the replay, want at least %s: not paced (100ms apart)", i+1, after, due)
		}
	}
	waitFor(t, func() bool {
		_, ev := admin(t, "GET", "/webhooks/events/gen/rp-0", "")
		att, _ := ev["attempts"].([]any)
		return ev["status"] == "delivered" && len(att) == 2
	})
	if _, ev := admin(t, "GET", "/webhooks/events/gen/rp-1", ""); len(ev["attempts"].([]any)) != 1 {
		t.Errorf("an event of the other type was attempted again: %v", ev)
	}

	for _, bad := range []string{`{"destination":"no~tilde"}`, `{"limit":5000}`, `{"until":"tomorrow"}`, `{"unknown":1}`} {
		if code, m := admin(t, "POST", "/webhooks/events/replay", bad); code != 400 || m["error"] == nil {
			t.Errorf("%s: %d %v", bad, code, m)
		}
	}
	if code, _ := admin(t, "POST", "/webhooks/events/replay", `{"destination":"default","dry_run":true}`); code != 200 {
		t.Errorf("destination default: %d", code)
	}
	// any destination may be named: gen's events have none but the default
	if code, m := admin(t, "POST", "/webhooks/events/replay", `{"source":"gen","destination":"analytics","dry_run":true}`); code != 200 || m["matched"] != float64(0) {
		t.Errorf("destination analytics: %d %v, want 200 matching nothing", code, m)
	}
}

// TestReplayLaneLeavesLiveTrafficAlone: a paused source's replays wait;
// a live event posted while a backlog of due replays of the paced source
// drains is delivered promptly, not behind the backlog: the replays wait
// in a lane of their own, which takes turns with the live one within the
// source's one pace.
func TestReplayLaneLeavesLiveTrafficAlone(t *testing.T) {
	up := newUpstream(t)
	startCaddy(t, up, "", fmt.Sprintf(`
	webhook_ingress /hooks/paced paced {
		verify hmac %s {
			header X-Signature
			prefix sha256=
		}
		forward_to %s/in/paced
		id_from header Idempotency-Key
		rate_limit 20/s
	}`, secret, up.URL))
	const n = 20
	var bodies [][]byte
	for i := range n {
		bodies = append(bodies, []byte(fmt.Sprintf(`{"n":%d}`, i)))
	}
	deliverAll(t, up, "/hooks/paced", "paced", "bk", bodies)

	// a backlog of due replays: replayed while the source is paused (its
	// replays wait too), resumed once all are due
	if code, m := admin(t, "POST", "/webhooks/sources/paced/pause", ""); code != 200 {
		t.Fatalf("pause: %d %v", code, m)
	}
	code, m := admin(t, "POST", "/webhooks/events/replay", `{"source":"paced"}`)
	if code != 200 || len(replayedIDs(t, m)) != n {
		t.Fatalf("replay: %d %v", code, m)
	}
	up.none(t, time.Second+100*time.Millisecond) // 20 at 20/s: all due by then, none sent while paused
	if code, m := admin(t, "POST", "/webhooks/sources/paced/resume", ""); code != 200 {
		t.Fatalf("resume: %d %v", code, m)
	}
	live := []byte(`{"live":true}`)
	posted := time.Now()
	if resp, _ := post(t, "/hooks/paced", live, signedHeaders(live, "live-1")); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("live post: %d", resp.StatusCode)
	}
	var liveAt, last time.Time
	replayed := 0
	for replayed < n {
		r := up.next(t, 10*time.Second)
		if bytes.Equal(r.Body, live) {
			liveAt = r.At
			continue
		}
		replayed++
		last = r.At
	}
	if liveAt.IsZero() {
		liveAt = up.next(t, 5*time.Second).At
		t.Fatalf("the live event arrived after the whole replay backlog (%s after it was posted)", liveAt.Sub(posted))
	}
	t.Logf("live event delivered %s after it was posted; the replay backlog ended %s after", liveAt.Sub(posted), last.Sub(posted))
	if d := liveAt.Sub(posted); d > 500*time.Millisecond || !liveAt.Before(last) {
		t.Errorf("the live event took %s, behind the replay backlog (which ended %s after it was posted)", d, last.Sub(posted))
	}
}
