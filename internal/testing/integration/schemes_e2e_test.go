package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The signatures below are computed here, independently of the verifiers.

func mac(h func() hash.Hash, key, msg string) []byte {
	m := hmac.New(h, []byte(key))
	m.Write([]byte(msg))
	return m.Sum(nil)
}

const (
	stripeSecret  = "whsec_e2e_stripe"
	shopifySecret = "e2e-shopify"
	slackSecret   = "e2e-slack"
	metaSecret    = "e2e-meta"
	metaToken     = "e2e-verify-token"
	twilioToken   = "e2e-twilio"
	gitlabToken   = "e2e-gitlab"
	paddleSecret  = "pdl_ntfset_e2e_paddle"
	xSecret       = "e2e-x"
	zoomSecret    = "e2e-zoom"
	graphState    = "e2e-graph-client-state"
)

// graphBody is a Graph change notification carrying clientState.
func graphBody(clientState string) string {
	return `{"value":[{"subscriptionId":"7f105c7d-2dc5-4530-97cd-4e7ae6534c07","subscriptionExpirationDateTime":"2026-12-01T00:00:00Z","clientState":"` +
		clientState + `","changeType":"created","resource":"users/u1/messages/m1","tenantId":"84bd8158-6d4d-4958-8b9f-9d6445542f95"}]}`
}

var stdKey = []byte("e2e-standard-webhooks-key-32byte")

// scheme is one provider: its source config and how it signs a body.
type scheme struct {
	name   string
	verify string // the verify line (with its block)
	sign   func(body string) (hdr map[string]string, path string)
	body   string
	form   bool
	// tampered and unsigned, when set, replace the body of the refused
	// requests (msgraph: the clientState is in the body)
	tampered, unsigned string
}

func schemes(t *testing.T) []scheme {
	sgKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sgPub, _ := x509.MarshalPKIXPublicKey(&sgKey.PublicKey)
	now := func() string { return strconv.FormatInt(time.Now().Unix(), 10) }
	whsec := "whsec_" + base64.StdEncoding.EncodeToString(stdKey)
	return []scheme{
		{name: "stripe", verify: "verify stripe " + stripeSecret, body: `{"id":"evt_e2e_1","type":"invoice.paid"}`,
			sign: func(b string) (map[string]string, string) {
				ts := now()
				return map[string]string{"Stripe-Signature": "t=" + ts + ",v1=" + hex.EncodeToString(mac(sha256.New, stripeSecret, ts+"."+b))}, ""
			}},
		{name: "standard", verify: "verify standard " + whsec, body: `{"type":"user.created"}`,
			sign: func(b string) (map[string]string, string) {
				ts, id := now(), "msg_e2e_std"
				m := hmac.New(sha256.New, stdKey)
				m.Write([]byte(id + "." + ts + "." + b))
				return map[string]string{"webhook-id": id, "webhook-timestamp": ts,
					"webhook-signature": "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))}, ""
			}},
		{name: "svix", verify: "verify svix " + whsec, body: `{"type":"user.deleted"}`,
			sign: func(b string) (map[string]string, string) {
				ts, id := now(), "msg_e2e_svix"
				m := hmac.New(sha256.New, stdKey)
				m.Write([]byte(id + "." + ts + "." + b))
				return map[string]string{"svix-id": id, "svix-timestamp": ts,
					"svix-signature": "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))}, ""
			}},
		{name: "shopify", verify: "verify shopify " + shopifySecret, body: `{"id":820982911946154508}`,
			sign: func(b string) (map[string]string, string) {
				return map[string]string{"X-Shopify-Hmac-Sha256": base64.StdEncoding.EncodeToString(mac(sha256.New, shopifySecret, b)),
					"X-Shopify-Webhook-Id": "shp-e2e-1"}, ""
			}},
		{name: "slack", verify: "verify slack " + slackSecret, body: `{"type":"event_callback","event_id":"Ev_E2E"}`,
			sign: func(b string) (map[string]string, string) {
				ts := now()
				return map[string]string{"X-Slack-Request-Timestamp": ts,
					"X-Slack-Signature": "v0=" + hex.EncodeToString(mac(sha256.New, slackSecret, "v0:"+ts+":"+b))}, ""
			}},
		{name: "meta", verify: "verify meta " + metaSecret + " {\n\t\t\tverify_token " + metaToken + "\n\t\t}",
			body: `{"object":"page","entry":[{"id":"e2e-entry","messaging":[{"message":{"mid":"m_e2e"}}]}]}`,
			sign: func(b string) (map[string]string, string) {
				return map[string]string{"X-Hub-Signature-256": "sha256=" + hex.EncodeToString(mac(sha256.New, metaSecret, b))}, ""
			}},
		{name: "whatsapp", verify: "verify whatsapp " + metaSecret, body: `{"entry":[{"id":"wa-e2e"}]}`,
			sign: func(b string) (map[string]string, string) {
				return map[string]string{"X-Hub-Signature-256": "sha256=" + hex.EncodeToString(mac(sha256.New, metaSecret, b))}, ""
			}},
		{name: "twilio", verify: fmt.Sprintf("verify twilio %s {\n\t\t\turl http://localhost:%d\n\t\t}", twilioToken, httpPort),
			body: "MessageSid=SM_e2e&Body=Hello+there&From=%2B15551234567", form: true,
			sign: func(b string) (map[string]string, string) {
				vals, _ := url.ParseQuery(b)
				keys := make([]string, 0, len(vals))
				for k := range vals {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				msg := fmt.Sprintf("http://localhost:%d/hooks/twilio", httpPort)
				for _, k := range keys {
					msg += k + vals.Get(k)
				}
				return map[string]string{"X-Twilio-Signature": base64.StdEncoding.EncodeToString(mac(sha1.New, twilioToken, msg))}, ""
			}},
		{name: "gitlab", verify: "verify gitlab " + gitlabToken, body: `{"object_kind":"push"}`,
			sign: func(string) (map[string]string, string) {
				return map[string]string{"X-Gitlab-Token": gitlabToken, "Idempotency-Key": "gl-e2e-1"}, ""
			}},
		{name: "paddle", verify: "verify paddle " + paddleSecret, body: `{"event_id":"evt_pdl_e2e","event_type":"transaction.paid"}`,
			sign: func(b string) (map[string]string, string) {
				ts := now()
				return map[string]string{"Paddle-Signature": "ts=" + ts + ";h1=" + hex.EncodeToString(mac(sha256.New, paddleSecret, ts+":"+b))}, ""
			}},
		{name: "sendgrid", verify: "verify sendgrid " + base64.StdEncoding.EncodeToString(sgPub), body: "[{\"sg_event_id\":\"sg-e2e\",\"event\":\"delivered\"}]\r\n",
			sign: func(b string) (map[string]string, string) {
				ts := now()
				sum := sha256.Sum256([]byte(ts + b))
				sig, err := ecdsa.SignASN1(rand.Reader, sgKey, sum[:])
				if err != nil {
					panic(err)
				}
				return map[string]string{"X-Twilio-Email-Event-Webhook-Timestamp": ts,
					"X-Twilio-Email-Event-Webhook-Signature": base64.StdEncoding.EncodeToString(sig)}, ""
			}},
		{name: "zoom", verify: "verify zoom " + zoomSecret, body: `{"event":"meeting.started","payload":{"account_id":"e2e","object":{"id":"111111111"}},"event_ts":1635885799302}`,
			sign: func(b string) (map[string]string, string) {
				ts := now()
				return map[string]string{"x-zm-request-timestamp": ts, "x-zm-signature": "v0=" + hex.EncodeToString(mac(sha256.New, zoomSecret, "v0:"+ts+":"+b))}, ""
			}},
		{name: "msgraph", verify: "verify msgraph " + graphState, body: graphBody(graphState),
			tampered: graphBody("forged-client-state"), unsigned: `{"value":[{"changeType":"created"}]}`,
			sign: func(string) (map[string]string, string) { return nil, "" }},
		{name: "x", verify: "verify x " + xSecret, body: `{"for_user_id":"e2e"}`,
			sign: func(b string) (map[string]string, string) {
				return map[string]string{"X-Twitter-Webhooks-Signature": "sha256=" + base64.StdEncoding.EncodeToString(mac(sha256.New, xSecret, b)),
					"Idempotency-Key": "x-e2e-1"}, ""
			}},
	}
}

// TestEverySchemeThroughCaddy: for every verify scheme, a correctly signed
// webhook is accepted and delivered byte-exact, the same webhook with one
// body byte changed is refused with 401, and unsigned requests get 401
// INVALID_SIGNATURE_FORMAT. Caddy runs with every logger at DEBUG in one
// file and the site's access log in another, with the README's filter:
// once every scheme's requests and handshakes went through, no byte Caddy
// wrote and no answer of the admin API (so of the CLI and the dashboard,
// which read it) holds a configured secret or a body (neverShown).
func TestEverySchemeThroughCaddy(t *testing.T) {
	up := newUpstream(t)
	all := schemes(t)
	var sites strings.Builder
	for _, s := range all {
		fmt.Fprintf(&sites, "\twebhook_ingress /hooks/%s %s {\n\t\t%s\n\t\tforward_to %s/in/%s\n\t}\n", s.name, s.name, s.verify, up.URL, s.name)
	}
	logDir := t.TempDir()
	caddyLog, accessLog := filepath.Join(logDir, "caddy.log"), filepath.Join(logDir, "access.log")
	global := fmt.Sprintf("log {\n\t\toutput file %s\n\t\tlevel DEBUG\n\t\tformat json\n\t}", caddyLog)
	sites.WriteString(strings.Replace(readmeLogBlock(t), "log {", "log {\n\t\toutput file "+accessLog, 1))
	startCaddyWith(t, up, global, defaultStorage(t)+"\n\t\taudit", sites.String())
	defer neverShown(t, all, caddyLog, accessLog)
	for _, s := range all {
		t.Run(s.name, func(t *testing.T) {
			hdr, _ := s.sign(s.body)
			ct := "application/json"
			if s.form {
				ct = "application/x-www-form-urlencoded"
			}
			withCT := func(h map[string]string) map[string]string {
				out := map[string]string{"Content-Type": ct}
				for k, v := range h {
					out[k] = v
				}
				return out
			}
			resp, m := post(t, "/hooks/"+s.name, []byte(s.body), withCT(hdr))
			if resp.StatusCode != 202 {
				t.Fatalf("valid: %d %v", resp.StatusCode, m)
			}
			got := up.next(t, 5*time.Second)
			if got.Path != "/in/"+s.name || string(got.Body) != s.body {
				t.Fatalf("delivered %s %q", got.Path, got.Body)
			}
			tampered := " " + s.body // one byte more: the signature no longer matches
			if s.tampered != "" {
				tampered = s.tampered
			}
			if s.name == "gitlab" {
				hdr = map[string]string{"X-Gitlab-Token": "wrong-token"}
			}
			if resp, m := post(t, "/hooks/"+s.name, []byte(tampered), withCT(hdr)); resp.StatusCode != 401 || m["code"] != "UNAUTHORIZED" {
				t.Fatalf("tampered: %d %v", resp.StatusCode, m)
			}
			unsigned := s.body
			if s.unsigned != "" {
				unsigned = s.unsigned
			}
			if resp, m := post(t, "/hooks/"+s.name, []byte(unsigned), withCT(nil)); resp.StatusCode != 401 || m["code"] != "INVALID_SIGNATURE_FORMAT" {
				t.Fatalf("unsigned: %d %v", resp.StatusCode, m)
			}
		})
	}
	up.none(t, 200*time.Millisecond)

	t.Run("slack url_verification", func(t *testing.T) {
		body := `{"type":"url_verification","challenge":"chal-e2e-123","token":"x"}`
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		hdr := map[string]string{"Content-Type": "application/json", "X-Slack-Request-Timestamp": ts,
			"X-Slack-Signature": "v0=" + hex.EncodeToString(mac(sha256.New, slackSecret, "v0:"+ts+":"+body))}
		resp, m := post(t, "/hooks/slack", []byte(body), hdr)
		if resp.StatusCode != 200 || m["challenge"] != "chal-e2e-123" {
			t.Fatalf("%d %v", resp.StatusCode, m)
		}
		// unsigned: refused before any answer to the challenge
		hdr["X-Slack-Signature"] = "v0=" + strings.Repeat("0", 64)
		if resp, _ := post(t, "/hooks/slack", []byte(body), hdr); resp.StatusCode != 401 {
			t.Fatalf("unsigned challenge: %d", resp.StatusCode)
		}
	})
	t.Run("meta hub.challenge", func(t *testing.T) {
		get := func(q string) (int, string) {
			resp, err := http.Get(fmt.Sprintf("http://localhost:%d/hooks/meta?%s", httpPort, q))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		if code, body := get("hub.mode=subscribe&hub.verify_token=" + metaToken + "&hub.challenge=1158201444"); code != 200 || body != "1158201444" {
			t.Fatalf("right token: %d %q", code, body)
		}
		if code, _ := get("hub.mode=subscribe&hub.verify_token=wrong&hub.challenge=1158201444"); code != 403 {
			t.Fatalf("wrong token: %d", code)
		}
		if code, _ := get(""); code != 405 {
			t.Fatalf("plain GET: %d, want 405", code)
		}
	})
	t.Run("x crc", func(t *testing.T) {
		resp, m := do(t, mustGet(t, fmt.Sprintf("http://localhost:%d/hooks/x?crc_token=crc-e2e", httpPort)))
		want := "sha256=" + base64.StdEncoding.EncodeToString(mac(sha256.New, xSecret, "crc-e2e"))
		if resp.StatusCode != 200 || m["response_token"] != want {
			t.Fatalf("%d %v, want %s", resp.StatusCode, m, want)
		}
	})
	t.Run("zoom url_validation", func(t *testing.T) {
		body := `{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}`
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		hdr := map[string]string{"Content-Type": "application/json", "x-zm-request-timestamp": ts,
			"x-zm-signature": "v0=" + hex.EncodeToString(mac(sha256.New, zoomSecret, "v0:"+ts+":"+body))}
		resp, m := post(t, "/hooks/zoom", []byte(body), hdr)
		want := hex.EncodeToString(mac(sha256.New, zoomSecret, "qgg8vlvZRS6UYooatFL8Aw"))
		if resp.StatusCode != 200 || m["plainToken"] != "qgg8vlvZRS6UYooatFL8Aw" || m["encryptedToken"] != want {
			t.Fatalf("%d %v, want encryptedToken %s", resp.StatusCode, m, want)
		}
		// unsigned: refused before any answer to the challenge
		hdr["x-zm-signature"] = "v0=" + strings.Repeat("0", 64)
		if resp, m := post(t, "/hooks/zoom", []byte(body), hdr); resp.StatusCode != 401 || m["encryptedToken"] != nil {
			t.Fatalf("unsigned challenge: %d %v", resp.StatusCode, m)
		}
	})
	t.Run("msgraph validationToken", func(t *testing.T) {
		const token = "Validation: Testing client application reachability for subscription Request-Id: 522a8e7e-096a-494c-aaf1-ac0dcfca45b7"
		validate := func(query string) (int, string, string) {
			req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("http://localhost:%d/hooks/msgraph?%s", httpPort, query), nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "text/plain; charset=utf-8")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
		}
		if code, ct, body := validate("validationToken=" + url.QueryEscape(token)); code != 200 || !strings.HasPrefix(ct, "text/plain") || body != token {
			t.Fatalf("validation: %d %q %q", code, ct, body)
		}
		if code, _, body := validate("validationToken=" + url.QueryEscape("<script>alert(1)</script>")); code != 401 || strings.Contains(body, "<script>") {
			t.Fatalf("markup token: %d %q", code, body)
		}
	})
	up.none(t, 200*time.Millisecond) // handshakes are never queued
}

func mustGet(t *testing.T, u string) *http.Request {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// neverShown checks that no configured secret of the schemes and no body
// they sent is in Caddy's logs (every logger at DEBUG, the access log) or
// in an answer of the admin API: stats, metrics, the events list and each
// event's lookup, the DLQ.
func neverShown(t *testing.T, all []scheme, logs ...string) {
	t.Helper()
	if t.Failed() {
		return
	}
	secrets := []string{stripeSecret, shopifySecret, slackSecret, metaSecret, metaToken, twilioToken, gitlabToken,
		paddleSecret, xSecret, zoomSecret, graphState, base64.StdEncoding.EncodeToString(stdKey), string(stdKey)}
	var bodies []string
	for _, s := range all {
		if len(s.body) > 16 { // long enough to be the body, not a word of it
			escaped, _ := json.Marshal(s.body)
			bodies = append(bodies, s.body, strings.Trim(string(escaped), `"`))
		}
	}
	texts := map[string]string{}
	for _, l := range logs {
		raw, err := os.ReadFile(l)
		if err != nil || len(raw) == 0 {
			t.Fatalf("%s: %v (empty: the check would prove nothing)", l, err)
		}
		texts[filepath.Base(l)] = string(raw)
	}
	for _, p := range []string{"/webhooks/stats", "/webhooks/events?limit=500", "/webhooks/dlq?limit=500", "/metrics"} {
		resp, err := http.Get(adminAddr + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		texts["GET "+p] = string(b)
		if p == "/webhooks/events?limit=500" {
			var page struct {
				Items []struct {
					Source  string `json:"source"`
					EventID string `json:"event_id"`
				} `json:"items"`
			}
			if err := json.Unmarshal(b, &page); err != nil || len(page.Items) < len(all) {
				t.Fatalf("events list: %v, %d items", err, len(page.Items))
			}
			for _, it := range page.Items {
				_, ev := admin(t, "GET", "/webhooks/events/"+url.PathEscape(it.Source)+"/"+url.PathEscape(it.EventID), "")
				enc, _ := json.Marshal(ev)
				texts["lookup "+it.Source+"/"+it.EventID] = string(enc)
			}
		}
	}
	if !strings.Contains(texts["caddy.log"], `"level":"debug"`) || !strings.Contains(texts["access.log"], "/hooks/gitlab") ||
		!strings.Contains(texts["access.log"], "hub.mode=subscribe") {
		t.Fatal("the logs lack the debug lines or the access entries: the check would prove nothing")
	}
	for where, text := range texts {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s holds the secret %q", where, s)
			}
		}
		for _, b := range bodies {
			if strings.Contains(text, b) {
				t.Errorf("%s holds the body %q", where, b)
			}
		}
	}
}
