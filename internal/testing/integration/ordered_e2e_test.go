package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestOrderedBlocksOnDead: deliveries of one key go one at a time in
// acceptance order; a dead-lettered head holds its key (its DLQ entry says
// how many wait behind it) while another key flows; resolving the entry
// lets the rest go, in order. A destination with on_dead skip lets the next
// go at once.
func TestOrderedBlocksOnDead(t *testing.T) {
	def, skip := newUpstream(t), newUpstream(t)
	failSeq := func(u *upstream) {
		u.setRespond(func(n int, w http.ResponseWriter) {
			if n == 1 {
				w.WriteHeader(http.StatusUnprocessableEntity) // the first request, a-0: dead at once
			}
		})
	}
	failSeq(def)
	failSeq(skip)
	startCaddy(t, def, "", fmt.Sprintf(`
	webhook_ingress /hooks/ord ord {
		verify none
		id_from header Idempotency-Key
		forward_to %s/in/default
		ordered json key
		destination skipper %s/in/skipper {
			ordered json key {
				on_dead skip
			}
		}
	}`, def.URL, skip.URL))

	postEvent := func(key string, seq int) {
		t.Helper()
		body := []byte(fmt.Sprintf(`{"key":%q,"seq":%d}`, key, seq))
		if resp, m := post(t, "/hooks/ord", body, map[string]string{"Idempotency-Key": fmt.Sprintf("%s-%d", key, seq)}); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%s-%d: %d %v", key, seq, resp.StatusCode, m)
		}
	}
	seqOf := func(r recorded) string {
		var ev struct {
			Key string `json:"key"`
			Seq int    `json:"seq"`
		}
		_ = json.Unmarshal(r.Body, &ev)
		return fmt.Sprintf("%s-%d", ev.Key, ev.Seq)
	}
	postEvent("a", 0)
	if got := seqOf(def.next(t, 5*time.Second)); got != "a-0" {
		t.Fatalf("first delivery %s", got)
	}
	for seq := 1; seq <= 2; seq++ {
		postEvent("a", seq)
	}
	postEvent("b", 0)

	// skipper: a-0 dead, then a-1, a-2 and b-0 (b in any place)
	var skipped []string
	for range 4 {
		skipped = append(skipped, seqOf(skip.next(t, 5*time.Second)))
	}
	if fmt.Sprint(without(skipped, "b-0")) != "[a-0 a-1 a-2]" {
		t.Errorf("skipper got %v, want a-0 a-1 a-2 in order (and b-0)", skipped)
	}
	// default: b-0 flows, a-1 and a-2 wait behind the dead a-0
	if got := seqOf(def.next(t, 5*time.Second)); got != "b-0" {
		t.Fatalf("default got %s, want b-0 (a is blocked)", got)
	}
	def.none(t, 500*time.Millisecond)

	var entry map[string]any
	waitFor(t, func() bool {
		_, page := admin(t, "GET", "/webhooks/dlq?source=ord&destination=default", "")
		entries, _ := page["entries"].([]any)
		if len(entries) != 1 {
			return false
		}
		entry = entries[0].(map[string]any)
		return true
	})
	if entry["event_id"] != "a-0" || entry["waiting"] != float64(2) {
		t.Fatalf("blocking entry %v, want a-0 with 2 waiting", entry)
	}
	_, full := admin(t, "GET", "/webhooks/dlq/"+entry["id"].(string), "")
	if full["waiting"] != float64(2) {
		t.Errorf("entry detail waiting %v, want 2", full["waiting"])
	}
	if _, page := admin(t, "GET", "/webhooks/dlq?source=ord&destination=skipper", ""); len(page["entries"].([]any)) != 1 ||
		page["entries"].([]any)[0].(map[string]any)["waiting"] != nil {
		t.Errorf("skipper's entry: %v, want one, nothing waiting", page)
	}

	// the operator resolves a-0 (handled by hand): a-1 then a-2 go
	if code, m := admin(t, "POST", "/webhooks/dlq/"+entry["id"].(string)+"/resolve", `{"resolution":"replayed by hand"}`); code != 200 {
		t.Fatalf("resolve: %d %v", code, m)
	}
	for _, want := range []string{"a-1", "a-2"} {
		if got := seqOf(def.next(t, 5*time.Second)); got != want {
			t.Fatalf("after resolve: %s, want %s", got, want)
		}
	}
}

// without returns s without v.
func without(s []string, v string) []string {
	var out []string
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}
