package integration

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"
	"time"
)

// TestDedupeWindowDefaults: a source without dedupe_window keeps its
// events' ids claimed for as long as its provider resends them (GitHub:
// manual redelivery for 3 days, so 4 days), a source of Stripe's format
// under another provider's header keeps the one-day default, and
// dedupe_window overrides either. The claim's end is read back from the
// erase answer (dedupe_until), which keeps the claim.
func TestDedupeWindowDefaults(t *testing.T) {
	up := newUpstream(t)
	routes := `webhook_ingress /hooks/ghdw ghdw {
		verify github ` + secret + `
		forward_to ` + up.URL + `/in/ghdw
	}
	webhook_ingress /hooks/ghdw2 ghdw2 {
		verify github ` + secret + `
		dedupe_window 2h
		forward_to ` + up.URL + `/in/ghdw2
	}
	webhook_ingress /hooks/muxdw muxdw {
		verify stripe ` + secret + ` {
			header Mux-Signature
		}
		id_from json id
		forward_to ` + up.URL + `/in/muxdw
	}`
	startCaddy(t, up, "", routes)
	body := []byte(`{"id":"dw-1","zen":"Keep it logically awesome."}`)
	mac := func(msg string) string {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(msg))
		return hex.EncodeToString(m.Sum(nil))
	}
	at := strconv.FormatInt(time.Now().Unix(), 10)
	for _, tc := range []struct {
		source  string
		headers map[string]string
		window  time.Duration
	}{
		{"ghdw", map[string]string{"X-Hub-Signature-256": "sha256=" + mac(string(body)), "X-GitHub-Delivery": "dw-1", "X-GitHub-Event": "ping"}, 4 * 24 * time.Hour},
		{"ghdw2", map[string]string{"X-Hub-Signature-256": "sha256=" + mac(string(body)), "X-GitHub-Delivery": "dw-1", "X-GitHub-Event": "ping"}, 2 * time.Hour},
		{"muxdw", map[string]string{"Mux-Signature": "t=" + at + ",v1=" + mac(at+"."+string(body))}, 24 * time.Hour},
	} {
		sent := time.Now()
		if resp, m := post(t, "/hooks/"+tc.source, body, tc.headers); resp.StatusCode != 202 {
			t.Fatalf("%s: %d %v", tc.source, resp.StatusCode, m)
		}
		waitFor(t, func() bool {
			code, ev := admin(t, "GET", "/webhooks/events/"+tc.source+"/dw-1", "")
			return code == 200 && ev["status"] == "delivered"
		})
		code, ans := admin(t, "DELETE", "/webhooks/events/"+tc.source+"/dw-1", "")
		until, err := time.Parse(time.RFC3339Nano, stringOf(ans["dedupe_until"]))
		if code != 200 || err != nil {
			t.Fatalf("%s: erase %d %v (%v)", tc.source, code, ans, err)
		}
		if want := sent.Add(tc.window); until.Before(want.Add(-time.Minute)) || until.After(want.Add(time.Minute)) {
			t.Errorf("%s: claimed until %v, want about %v (a window of %v)", tc.source, until, want, tc.window)
		}
	}
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}
