// Package gosdk cross-checks hookline's recipes against the providers'
// official Go SDKs (the npm ones: verifiers/sdkcheck_test.go). A module
// of its own, so that hookline itself does not depend on them;
// scripts/test runs it.
package gosdk

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PagerDuty/go-pagerduty/webhookv3"
	buildkite "github.com/buildkite/go-buildkite/v4"
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/hookline/hookline/internal/testing/recipes"
	"github.com/hookline/hookline/verifiers"
)

// TestGoSDKs: for each provider with an official Go SDK in the module
// proxy, a request signed as its page documents (and its SDK test's
// published case) is accepted by both the SDK's verifier and the
// docs/providers.md recipe a user writes, and a changed body by neither.
func TestGoSDKs(t *testing.T) {
	now := time.Now()
	mac := func(key string, parts ...string) string {
		m := hmac.New(sha256.New, []byte(key))
		m.Write([]byte(strings.Join(parts, "")))
		return hex.EncodeToString(m.Sum(nil))
	}
	const body = `{"event":{"id":"01DXWL2QX7TVEBMMCR1S2V8BVQ","event_type":"incident.triggered"},"id":"1"}`
	ts := strconv.FormatInt(now.Unix(), 10)
	for _, tc := range []struct {
		name, recipe, secret, body string
		headers                    map[string]string
		at                         time.Time
		sdk                        func(r *http.Request, secret string) error
	}{
		{name: "pagerduty, signed as documented, during a rotation", recipe: "pagerduty", secret: "pd-webhook-secret", body: body,
			headers: map[string]string{"X-PagerDuty-Signature": "v1=" + mac("old-secret", body) + ",v1=" + mac("pd-webhook-secret", body)},
			at:      now, sdk: webhookv3.VerifySignature},
		{name: "pagerduty, the SDK's own test case", recipe: "pagerduty", secret: pagerDutySecret, body: pagerDutyBody,
			headers: map[string]string{"X-PagerDuty-Signature": "v1=0c0b9495b893a39e70d1fea2fe11fbe0a825f88b9f67846f6cc07dd2bc5476cd"},
			at:      now, sdk: webhookv3.VerifySignature},
		{name: "buildkite, signed as documented", recipe: "buildkite", secret: "bk-webhook-token", body: body,
			headers: map[string]string{"X-Buildkite-Signature": "timestamp=" + ts + ",signature=" + mac("bk-webhook-token", ts, ".", body)},
			at:      now, sdk: buildkiteValidate},
		{name: "buildkite, the SDK's own test case", recipe: "buildkite", secret: "29b1ff5779c76bd48ba6705eb99ff970", body: buildkiteBody,
			headers: map[string]string{"X-Buildkite-Signature": "timestamp=1642080837,signature=582d496ac2d869dd97a3101c4cda346288c49a742592daf582ec64c86449f79c"},
			at:      time.Unix(1642080837, 0), sdk: buildkiteValidate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := loadRecipe(t, tc.recipe, tc.secret)
			req := func(b string) *http.Request {
				r := httptest.NewRequest(http.MethodPost, "/hooks/"+tc.recipe, strings.NewReader(b))
				for k, val := range tc.headers {
					r.Header.Set(k, val)
				}
				return r
			}
			if err := tc.sdk(req(tc.body), tc.secret); err != nil {
				t.Errorf("the SDK refuses it: %v", err)
			}
			if err := v.Verify(req(tc.body), []byte(tc.body), tc.at); err != nil {
				t.Errorf("the recipe refuses it: %v", err)
			}
			changed := strings.Replace(tc.body, "{", "{ ", 1)
			if tc.sdk(req(changed), tc.secret) == nil {
				t.Error("the SDK accepts the body changed")
			}
			if v.Verify(req(changed), []byte(changed), tc.at) == nil {
				t.Error("the recipe accepts the body changed")
			}
		})
	}
}

// buildkiteValidate is go-buildkite's ValidatePayload as a check.
func buildkiteValidate(r *http.Request, secret string) error {
	_, err := buildkite.ValidatePayload(r, []byte(secret))
	return err
}

// loadRecipe provisions the verify directive of recipe in
// docs/providers.md, its {env.*} secret set to secret.
func loadRecipe(t *testing.T, recipe, secret string) verifiers.Verifier {
	t.Helper()
	blocks, err := recipes.Read("../../../docs/providers.md")
	if err != nil {
		t.Fatal(err)
	}
	block, ok := blocks[recipe]
	if !ok {
		t.Fatalf("no recipe %s", recipe)
	}
	directive, err := recipes.VerifyDirective(block)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range recipes.EnvPlaceholder.FindAllStringSubmatch(directive, -1) {
		t.Setenv(m[1], secret)
	}
	name := strings.Fields(directive)[0]
	info, err := caddy.GetModule("webhooks.verifiers." + name)
	if err != nil {
		t.Fatal(err)
	}
	mod := info.New()
	if err := mod.(caddyfile.Unmarshaler).UnmarshalCaddyfile(caddyfile.NewTestDispenser(directive)); err != nil {
		t.Fatalf("%s: %v", directive, err)
	}
	cfg, err := json.Marshal(mod)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	v, err := ctx.LoadModuleByID("webhooks.verifiers."+name, cfg)
	if err != nil {
		t.Fatalf("provisioning %s: %v", cfg, err)
	}
	return v.(verifiers.Verifier)
}

// The official SDKs' test cases: go-pagerduty webhookv3/webhookv3_test.go
// and go-buildkite webhook_test.go (their bodies byte for byte, as
// verifiers/providers_test.go has them).
const pagerDutySecret = "lDQHScfUeXUKaQRNF+8XIiDKZ7XX3itBAYzwU0TARw8lJqRnkKl2iB1anSb0Z+IK"

const pagerDutyBody = `{"event":{"id":"01BWDWL3NYY7LUFPZCC28QUCMK","event_type":"incident.priority_updated","resource_type":"incident","occurred_at":"2021-04-26T17:36:27.458Z","agent":{"html_url":"https://acme.pagerduty.com/users/PLH1HKV","id":"PLH1HKV","self":"https://api.pagerduty.com/users/PLH1HKV","summary":"Tenex Engineer","type":"user_reference"},"client":null,"data":{"id":"PGR0VU2","type":"incident","self":"https://api.pagerduty.com/incidents/PGR0VU2","html_url":"https://acme.pagerduty.com/incidents/PGR0VU2","number":2,"status":"triggered","title":"A little bump in the road","service":{"html_url":"https://acme.pagerduty.com/services/PF9KMXH","id":"PF9KMXH","self":"https://api.pagerduty.com/services/PF9KMXH","summary":"API Service","type":"service_reference"},"assignees":[{"html_url":"https://acme.pagerduty.com/users/PTUXL6G","id":"PTUXL6G","self":"https://api.pagerduty.com/users/PTUXL6G","summary":"User 123","type":"user_reference"}],"escalation_policy":{"html_url":"https://acme.pagerduty.com/escalation_policies/PUS0KTE","id":"PUS0KTE","self":"https://api.pagerduty.com/escalation_policies/PUS0KTE","summary":"Default","type":"escalation_policy_reference"},"teams":[{"html_url":"https://acme.pagerduty.com/teams/PFCVPS0","id":"PFCVPS0","self":"https://api.pagerduty.com/teams/PFCVPS0","summary":"Engineering","type":"team_reference"}],"priority":{"html_url":"https://acme.pagerduty.com/account/incident_priorities","id":"PSO75BM","self":"https://api.pagerduty.com/priorities/PSO75BM","summary":"P1","type":"priority_reference"},"urgency":"high","conference_bridge":{"conference_number":1000,"conference_url":"https://example.com"},"resolve_reason":null}}}`

const buildkiteBody = `{"event":"ping","service":{"id":"c9f8372d-c0cd-43dc-9274-768a875cf6ca","provider":"webhook","settings":{"url":"https://server.com/webhooks"}},"organization":{"id":"49801950-1df0-474f-bb56-ad6a930c5cb9","graphql_id":"T3JnYW5pemF0aW9uLS0tZTBmMzk3MgsTksGkxOWYtZTZjNzczZTJiYjEy","url":"https://api.buildkite.com/v2/organizations/acme-inc","web_url":"https://buildkite.com/acme-inc","name":"ACME Inc","slug":"acme-inc","agents_url":"https://api.buildkite.com/v2/organizations/acme-inc/agents","emojis_url":"https://api.buildkite.com/v2/organizations/acme-inc/emojis","created_at":"2021-02-03T20:34:10.486Z","pipelines_url":"https://api.buildkite.com/v2/organizations/acme-inc/pipelines"},"sender":{"id":"c9f8372d-c0cd-43dc-9269-bcbb7f308e3f","name":"ACME Man"}}`
