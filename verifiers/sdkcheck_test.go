package verifiers

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/testing/recipes"
)

// TestOfficialSDKs runs the providers' official SDKs (testdata/sdkcheck:
// their npm packages at pinned versions) and checks that hookline accepts
// what they sign. check.mjs signs one request per SDK (with the SDK's own
// signing helper where it has one, otherwise as the provider documents),
// has the SDK verify it, and refuses it changed by one byte; each line
// it prints must then verify with the scheme or the recipe of
// docs/providers.md a user writes for that provider, and fail with a
// changed body. So the SDK's verifier and hookline's accept the same
// requests, and the SDKs that sign produce signatures hookline accepts.
// Every line is classified: checked here, or named in sdkUnsupported with
// the reason hookline does not verify it.
//
// It needs Node.js and npm (scripts/test installs them) and the npm
// registry for `npm ci`; without them it skips, except with CI=true. The
// official Go SDKs are checked the same way by testdata/sdkcheck/gosdk, a
// module of its own that scripts/test runs.
func TestOfficialSDKs(t *testing.T) {
	if testing.Short() {
		t.Skip("installs and runs the official SDKs (npm)")
	}
	dir, err := filepath.Abs("../testdata/sdkcheck")
	if err != nil {
		t.Fatal(err)
	}
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node and npm are required for the SDK cross-check (scripts/test installs them): %v %v", errNode, errNpm)
		}
		t.Skipf("node or npm missing: the official SDKs are not cross-checked (%v %v)", errNode, errNpm)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("npm ci: %v\n%s", err, out)
			}
			t.Skipf("npm ci failed (offline?): the official SDKs are not cross-checked: %v\n%s", err, out)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(node, "check.mjs")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("check.mjs: an SDK did not verify its own signature or accepted a changed body: %v\n%s\n%s", err, stderr.String(), stdout.String())
	}
	blocks := docRecipes(t)
	lines, seen := 0, map[string]bool{}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l sdkLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("check.mjs printed %q: %v", sc.Text(), err)
		}
		lines++
		key := l.SDK + " | " + l.Scheme
		seen[key] = true
		if reason, ok := sdkUnsupported[key]; ok {
			t.Logf("%s %s: not verified by hookline: %s", l.SDK, l.Version, reason)
			continue
		}
		how, ok := sdkVerifiers[key]
		if !ok {
			t.Errorf("%s: check.mjs printed a line no entry of sdkVerifiers or sdkUnsupported classifies", key)
			continue
		}
		t.Run(l.SDK+"/"+l.Scheme, func(t *testing.T) {
			signer := "the SDK"
			if l.SignAPI == nil {
				signer = "node:crypto, as documented"
			}
			directive := how.directive
			if how.recipe != "" {
				block, ok := blocks[how.recipe]
				if !ok {
					t.Fatalf("no recipe %s", how.recipe)
				}
				directive = verifyDirective(t, block)
				for _, e := range recipes.EnvPlaceholder.FindAllStringSubmatch(directive, -1) {
					t.Setenv(e[1], l.Secret)
				}
			}
			if how.url != "" && l.URL != "" {
				directive = strings.ReplaceAll(directive, how.url, strings.SplitN(l.URL, "?", 2)[0])
			}
			secret := l.Secret
			if how.secret != nil {
				secret = how.secret(l.Secret)
			}
			directive = strings.ReplaceAll(directive, "{secret}", secret)
			name := strings.Fields(directive)[0]
			cfg, err := unmarshalCaddyfile(t, name, directive)
			if err != nil {
				t.Fatalf("parsing %q: %v", directive, err)
			}
			v := mustLoad(t, name, cfg)
			req := func(body string) *http.Request {
				target := "/hook"
				if l.URL != "" {
					target = l.URL
				}
				r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
				for k, val := range l.Headers {
					r.Header.Set(k, val)
				}
				return r
			}
			now := time.Now()
			if err := v.Verify(req(l.Body), []byte(l.Body), now); err != nil {
				t.Errorf("%s %s signed by %s with %s: hookline (%s) refuses it: %v", l.SDK, l.Version, signer, l.SignAPIText(), directive, err)
			}
			changed := l.Body[:len(l.Body)-1] + " " + l.Body[len(l.Body)-1:]
			if err := v.Verify(req(changed), []byte(changed), now); err == nil {
				t.Errorf("%s: hookline accepts the body changed by a byte", l.SDK)
			}
		})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for key := range sdkVerifiers {
		if !seen[key] {
			t.Errorf("%s: no line of check.mjs", key)
		}
	}
	if lines < 30 {
		t.Errorf("%d lines from check.mjs, want every SDK's", lines)
	}
	t.Logf("%d official SDK lines: %d checked against hookline, %d not verifiable by it", lines, len(sdkVerifiers), len(sdkUnsupported))
}

// sdkLine is one line of check.mjs.
type sdkLine struct {
	SDK, Version, Scheme string
	Headers              map[string]string
	Body, Secret, URL    string
	SignAPI              *string `json:"sign_api"`
}

// SignAPIText names the SDK call that signed the line.
func (l sdkLine) SignAPIText() string {
	if l.SignAPI == nil {
		return "(none)"
	}
	return *l.SignAPI
}

// sdkVerify is how a user verifies one SDK's provider with hookline: a
// recipe of docs/providers.md (its {env.*} secret set to the line's), or
// a verify directive with {secret}; url is the recipe's literal URL,
// replaced by the one the line signed for; secret rewrites the line's
// secret as hookline takes it.
type sdkVerify struct {
	recipe, directive, url string
	secret                 func(string) string
}

// sdkVerifiers are the lines of check.mjs hookline verifies, by "sdk |
// scheme".
var sdkVerifiers = map[string]sdkVerify{
	"stripe | stripe": {directive: "stripe {secret}"},
	"svix | standard-webhooks (svix-* headers)":                     {directive: "svix {secret}"},
	"standardwebhooks | standard-webhooks":                          {directive: "standard {secret}"},
	"@octokit/webhooks-methods | github":                            {directive: "github {secret}"},
	"@octokit/webhooks | github":                                    {directive: "github {secret}"},
	"twilio | twilio form (x-www-form-urlencoded params)":           {directive: "twilio {secret} {\nurl https://example.com\n}"},
	"twilio | twilio json (bodySHA256 query param)":                 {directive: "twilio {secret} {\nurl https://example.com\n}"},
	"@sendgrid/eventwebhook | sendgrid ecdsa p-256":                 {directive: "sendgrid {secret}"},
	"@paddle/paddle-node-sdk | paddle":                              {directive: "paddle {secret} {\ntolerance 1m\n}"}, // 5 s by default: the SDKs run for a few
	"@shopify/shopify-api | shopify webhooks (X-Shopify-* headers)": {directive: "shopify {secret}"},
	"@shopify/shopify-api | shopify events (shopify-* headers)":     {directive: "shopify {secret}"},
	"@slack/bolt | slack v0":                                        {directive: "slack {secret}"},
	"@slack/events-api | slack v0":                                  {directive: "slack {secret}"},
	"razorpay | razorpay":                                           {recipe: "razorpay"},
	"square | square (url + body)":                                  {recipe: "square", url: "https://hooks.example.com/hooks/square"},
	"@line/bot-sdk | line":                                          {recipe: "line"},
	"@workos-inc/node | workos (ms timestamp)":                      {recipe: "workos"},
	"@hubspot/api-client | hubspot v3":                              {recipe: "hubspot", url: "https://hooks.example.com/hooks/hubspot"},
	"@linear/sdk | linear (webhookTimestamp in body)":               {recipe: "linear"},
	"gocardless-nodejs | gocardless":                                {recipe: "gocardless"},
	"@mux/mux-node | mux":                                           {recipe: "mux"},
	"replicate | standard-webhooks (replicate)":                     {recipe: "replicate"},
	"coinbase-commerce-node | coinbase commerce":                    {recipe: "coinbase"},
	"resend | standard-webhooks (svix-* headers, resend)":           {recipe: "resend"},
	"@clerk/backend | standard-webhooks (svix-* headers, clerk)":    {recipe: "clerk"},
	"openai | standard-webhooks (openai)":                           {recipe: "openai"},
	"box-node-sdk | box (primary + secondary)":                      {recipe: "box"},
	"pusher | pusher":                                               {recipe: "pusher"},
	"webflow-api | webflow (ms timestamp)":                          {recipe: "webflow"},
	"telnyx | telnyx ed25519":                                       {recipe: "telnyx"},
	"discord-interactions | discord ed25519":                        {recipe: "discord"},
	"@twurple/eventsub-http | twitch eventsub":                      {recipe: "twitch"},
	// Polar's SDK uses its secret's UTF-8 bytes as the Standard Webhooks
	// key: hookline takes it as whsec_ and their base64
	"@polar-sh/sdk | standard-webhooks (polar, utf-8 secret)": {directive: "standard {secret}", secret: func(s string) string {
		return "whsec_" + base64.StdEncoding.EncodeToString([]byte(s))
	}},
}

// sdkUnsupported are the lines of check.mjs hookline does not verify, and
// why.
var sdkUnsupported = map[string]string{
	"@hubspot/api-client | hubspot v1":      "a plain SHA-256 of secret and body, not an HMAC: only v3 is verified",
	"@hubspot/api-client | hubspot v2":      "a plain SHA-256 of secret, method, URL and body, not an HMAC: only v3 is verified",
	"@easypost/api | easypost":              "the SDK rewrites the body's integer weights before checking: no recipe until EasyPost's signed bytes are settled",
	"chargebee | basic auth (no signature)": "basic auth, no signature: Caddy's basic_auth in front of verify none",
}
