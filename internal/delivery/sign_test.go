package delivery

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// TestSignerVerifiedByOfficialLibrary: what Sign writes verifies with the
// official Standard Webhooks library under each key (rotation), replaces
// the sender's own signature headers (svix-* too: Svix's libraries read
// them first), and fails for a changed body or another key.
func TestSignerVerifiedByOfficialLibrary(t *testing.T) {
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 24)
	s, err := NewSigner([][]byte{k1, k2})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"type":"invoice.paid","n":1}`)
	h := http.Header{}
	for _, name := range replacedHeaders {
		h.Set(name, "from-the-sender")
	}
	h.Set("Content-Type", "application/json")
	s.Sign(h, "evt_1", body, time.Now())
	for _, name := range []string{"Svix-Id", "Svix-Timestamp", "Svix-Signature"} {
		if h.Get(name) != "" {
			t.Errorf("%s kept: %q", name, h.Get(name))
		}
	}
	if h.Get("webhook-id") != "evt_1" || h.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", h)
	}
	if n := len(strings.Fields(h.Get("webhook-signature"))); n != 2 {
		t.Errorf("%d signatures, want one a key", n)
	}
	for i, key := range [][]byte{k1, k2} {
		wh, err := standardwebhooks.NewWebhook("whsec_" + base64.StdEncoding.EncodeToString(key))
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(body, h); err != nil {
			t.Errorf("key %d: the official library refuses the signature: %v", i+1, err)
		}
		if err := wh.Verify(append(body, ' '), h); err == nil {
			t.Errorf("key %d: a changed body verifies", i+1)
		}
	}
	other, _ := standardwebhooks.NewWebhookRaw(bytes.Repeat([]byte{3}, 32))
	if err := other.Verify(body, h); err == nil {
		t.Error("another key verifies")
	}
	// an old timestamp is refused by the library: every attempt must be signed anew
	s.Sign(h, "evt_1", body, time.Now().Add(-time.Hour))
	wh, _ := standardwebhooks.NewWebhookRaw(k1)
	if err := wh.Verify(body, h); err == nil {
		t.Error("an hour-old signature verifies")
	}
}

func TestNewSigner(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys [][]byte
		ok   bool
	}{
		{"one key", [][]byte{make([]byte, 32)}, true},
		{"rotation", [][]byte{make([]byte, 32), make([]byte, 16)}, true},
		{"none", nil, false},
		{"short", [][]byte{make([]byte, 32), make([]byte, 8)}, false},
	} {
		if _, err := NewSigner(tc.keys); (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
