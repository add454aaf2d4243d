package integration

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// TestSignForwarded: with sign_forwarded, what the upstream receives
// verifies with the official Standard Webhooks library under each secret
// (rotation, one from a placeholder), on every attempt, each attempt with
// a fresh timestamp; the provider's own webhook-* headers are replaced.
func TestSignForwarded(t *testing.T) {
	key1, key2 := make([]byte, 32), make([]byte, 24)
	for i := range key1 {
		key1[i] = byte(i + 1)
	}
	for i := range key2 {
		key2[i] = byte(200 - i)
	}
	secret1 := "whsec_" + base64.StdEncoding.EncodeToString(key1)
	secret2 := "whsec_" + base64.StdEncoding.EncodeToString(key2)
	t.Setenv("HOOKLINE_TEST_SIGN_SECRET", secret2)
	up := newUpstream(t)
	up.setRespond(func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // retried
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	startCaddy(t, up, "", fmt.Sprintf(`
	webhook_ingress /hooks/signed signed {
		verify hmac %s {
			header X-Signature
			prefix sha256=
		}
		forward_to %s/in/signed
		id_from header Idempotency-Key
		retry {
			schedule 1100ms
		}
		sign_forwarded %s {env.HOOKLINE_TEST_SIGN_SECRET}
	}`, secret, up.URL, secret1))

	body := []byte(`{"signed":true}`)
	h := signedHeaders(body, "sf-1")
	h["webhook-signature"] = "v1,forged" // the provider's own: replaced
	h["webhook-timestamp"] = "1"
	if resp, m := post(t, "/hooks/signed", body, h); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("post: %d %v", resp.StatusCode, m)
	}
	var stamps []int64
	for attempt := 1; attempt <= 2; attempt++ {
		r := up.next(t, 5*time.Second)
		if r.Header.Get("webhook-id") != "sf-1" || len(r.Header.Values("webhook-signature")) != 1 {
			t.Fatalf("attempt %d: webhook-id %q, signatures %q", attempt, r.Header.Get("webhook-id"), r.Header.Values("webhook-signature"))
		}
		for i, s := range []string{secret1, secret2} {
			wh, err := standardwebhooks.NewWebhook(s)
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Verify(r.Body, r.Header); err != nil {
				t.Errorf("attempt %d, secret %d: the official library refuses: %v", attempt, i+1, err)
			}
		}
		ts, err := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
		if err != nil {
			t.Fatalf("attempt %d: webhook-timestamp %q", attempt, r.Header.Get("webhook-timestamp"))
		}
		stamps = append(stamps, ts)
	}
	if stamps[1] <= stamps[0] {
		t.Errorf("the retry was signed at %d, not after the first attempt at %d", stamps[1], stamps[0])
	}
}
