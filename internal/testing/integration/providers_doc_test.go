package integration

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig"

	"github.com/hookline/hookline/internal/testing/recipes"
)

// providersDoc is the page of provider recipes.
const providersDoc = "../../../docs/providers.md"

// TestProvidersDocAdapts: every recipe of docs/providers.md is a whole
// webhook_ingress block that the Caddyfile adapter takes without an error
// or a warning, with the scheme its verify line names
// (verifiers/providers_test.go proves each verify directive against the
// provider's signing).
func TestProvidersDocAdapts(t *testing.T) {
	blocks, err := recipes.Read(providersDoc)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) < 15 {
		t.Fatalf("%d recipes", len(blocks))
	}
	for _, name := range slices.Sorted(maps.Keys(blocks)) {
		block := blocks[name]
		t.Run(name, func(t *testing.T) {
			site := ":8080 {\n\t" + strings.ReplaceAll(block, "\n", "\n\t") + "\n}\n"
			out, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(site), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) > 0 {
				t.Fatalf("warnings: %v", warnings)
			}
			directive, err := recipes.VerifyDirective(block)
			if err != nil {
				t.Fatal(err)
			}
			scheme := strings.Fields(directive)[0]
			var cfg struct {
				Apps struct {
					HTTP struct {
						Servers map[string]struct {
							Routes []struct {
								Handle []struct {
									Verify struct {
										Scheme string `json:"scheme"`
									} `json:"verify"`
								} `json:"handle"`
							} `json:"routes"`
						} `json:"servers"`
					} `json:"http"`
				} `json:"apps"`
			}
			if err := json.Unmarshal(out, &cfg); err != nil {
				t.Fatal(err)
			}
			// the ingress's route (a recipe may answer a provider's check
			// with other directives beside it)
			got := ""
			for _, r := range cfg.Apps.HTTP.Servers["srv0"].Routes {
				for _, h := range r.Handle {
					if h.Verify.Scheme != "" {
						got = h.Verify.Scheme
					}
				}
			}
			if got != scheme {
				t.Fatalf("scheme %q, want %q in %s", got, scheme, strings.TrimSpace(string(out)))
			}
		})
	}
}

// TestProvidersDocChecks: the recipes that answer a provider's URL check
// with Caddy's own directives do it in a real Caddy: Dropbox's GET
// ?challenge= is echoed as text/plain with nosniff, Trello's HEAD gets a
// 200, and a signed POST still reaches the ingress; Discord's signed PING
// gets the 204 with no body it wants (ack_status 204), and is delivered.
func TestProvidersDocChecks(t *testing.T) {
	blocks, err := recipes.Read(providersDoc)
	if err != nil {
		t.Fatal(err)
	}
	up := newUpstream(t)
	t.Setenv("DROPBOX_APP_SECRET", "dropbox-app-secret")
	t.Setenv("TRELLO_APP_SECRET", "trello-app-secret")
	discordKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	t.Setenv("DISCORD_PUBLIC_KEY", hex.EncodeToString(discordKey.Public().(ed25519.PublicKey)))
	t.Setenv("TWITCH_EVENTSUB_SECRET", "twitch-eventsub-secret")
	var routes []string
	for _, name := range []string{"dropbox", "trello", "discord", "twitch"} {
		b, ok := blocks[name]
		if !ok {
			t.Fatalf("no %s recipe", name)
		}
		routes = append(routes, strings.ReplaceAll(b, "http://127.0.0.1:9000/", up.URL+"/in/"))
	}
	startCaddy(t, up, "", strings.Join(routes, "\n"))

	resp, err := http.Get("http://localhost:9080/hooks/dropbox?challenge=Mj5r_ea2Xq")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "Mj5r_ea2Xq" || resp.Header.Get("Content-Type") != "text/plain" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("Dropbox's challenge: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, err = http.Head("http://localhost:9080/hooks/trello")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("Trello's HEAD: %d", resp.StatusCode)
	}
	payload := []byte(`{"list_folder":{"accounts":["dbid:1"]}}`)
	m := hmac.New(sha256.New, []byte("dropbox-app-secret"))
	m.Write(payload)
	if resp, got := post(t, "/hooks/dropbox", payload, map[string]string{"X-Dropbox-Signature": hex.EncodeToString(m.Sum(nil))}); resp.StatusCode != 202 {
		t.Errorf("a signed Dropbox notification: %d %v", resp.StatusCode, got)
	}
	if got := up.next(t, 5*time.Second); got.Path != "/in/dropbox" {
		t.Errorf("delivered to %s, want /in/dropbox", got.Path)
	}
	if resp, _ := post(t, "/hooks/trello", payload, map[string]string{"X-Trello-Webhook": "bm90IGEgc2lnbmF0dXJlIG9mIHRoZSBib2R5IQ=="}); resp.StatusCode != 401 {
		t.Errorf("an unsigned Trello POST: %d, want 401", resp.StatusCode)
	}
	ping := []byte(`{"version":1,"application_id":"1234567890","type":0}`)
	at := strconv.FormatInt(time.Now().Unix(), 10)
	discordHeaders := map[string]string{"X-Signature-Timestamp": at, "X-Signature-Ed25519": hex.EncodeToString(ed25519.Sign(discordKey, append([]byte(at), ping...)))}
	if resp, body = postRaw(t, "/hooks/discord", ping, discordHeaders); resp.StatusCode != http.StatusNoContent || len(body) != 0 {
		t.Errorf("Discord's PING: %d %q, want 204 and no body", resp.StatusCode, body)
	}
	if got := up.next(t, 5*time.Second); got.Path != "/in/discord" {
		t.Errorf("delivered to %s, want /in/discord", got.Path)
	}
	// the recipe has no id rule, so a PING sent again with an
	// Idempotency-Key twice is the duplicate case: a 204 as well
	discordHeaders["Idempotency-Key"] = "discord-dup-1"
	for i := range 2 {
		if resp, body := postRaw(t, "/hooks/discord", ping, discordHeaders); resp.StatusCode != http.StatusNoContent || len(body) != 0 {
			t.Errorf("Discord's PING sent %d times: %d %q, want 204 and no body", i+1, resp.StatusCode, body)
		}
	}
	// Twitch's verification of a new subscription: its challenge back, as
	// text/plain, never queued
	verification := []byte(`{"challenge":"pogchamp-kappa-360noscope-vohiyo","subscription":{"type":"channel.follow","version":"1"}}`)
	ts := time.Now().UTC().Format(time.RFC3339Nano)
	tm := hmac.New(sha256.New, []byte("twitch-eventsub-secret"))
	tm.Write([]byte("msg-1" + ts + string(verification)))
	twitchHeaders := map[string]string{"Twitch-Eventsub-Message-Id": "msg-1", "Twitch-Eventsub-Message-Timestamp": ts,
		"Twitch-Eventsub-Message-Type": "webhook_callback_verification", "Twitch-Eventsub-Message-Signature": "sha256=" + hex.EncodeToString(tm.Sum(nil))}
	resp, body = postRaw(t, "/hooks/twitch", verification, twitchHeaders)
	if resp.StatusCode != 200 || string(body) != "pogchamp-kappa-360noscope-vohiyo" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("Twitch's verification: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	// one signed with another secret: refused, the challenge not echoed
	twitchHeaders["Twitch-Eventsub-Message-Id"] = "msg-2"
	twitchHeaders["Twitch-Eventsub-Message-Signature"] = "sha256=" + strings.Repeat("ab", 32)
	resp, body = postRaw(t, "/hooks/twitch", verification, twitchHeaders)
	if resp.StatusCode != 401 || strings.Contains(string(body), "pogchamp") {
		t.Errorf("a mis-signed verification: %d %q, want 401 without the challenge", resp.StatusCode, body)
	}
	metrics := scrape(t)
	if !strings.Contains(metrics, `caddy_webhooks_received_total{outcome="handshake",source="twitch"} 1`) ||
		strings.Contains(metrics, `caddy_webhooks_received_total{outcome="accepted",source="twitch"}`) {
		t.Errorf("Twitch's verifications: want one handshake and nothing queued:\n%s", grepLines(metrics, "received_total"))
	}
	if m := scrape(t); !strings.Contains(m, `caddy_webhooks_received_total{outcome="duplicate",source="discord"} 1`) {
		t.Errorf("the second was not answered as a duplicate:\n%s", grepLines(m, "received_total"))
	}
}
