package ingress

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/storage"
)

// TestConfigDurationsAcceptCaddyStrings: every duration of a source's
// JSON config takes a Caddy duration string as well as nanoseconds, and
// both provision to the same runtime values.
func TestConfigDurationsAcceptCaddyStrings(t *testing.T) {
	const base = `{"source":"%s","verify":{"scheme":"none"},"forward_to":"http://127.0.0.1:1/",`
	for _, tc := range []struct {
		name    string
		field   string // the JSON after base, %s for the duration
		ns, str string
		check   func(t *testing.T, h *Ingress)
	}{
		{name: "dedupe_window", field: `"dedupe_window":%s}`, ns: "172800000000000", str: `"2d"`,
			check: func(t *testing.T, h *Ingress) { checkDur(t, time.Duration(h.DedupeWindow), 48*time.Hour) }},
		{name: "timeout", field: `"timeout":%s}`, ns: "30000000000", str: `"30s"`,
			check: func(t *testing.T, h *Ingress) {
				checkDur(t, h.source().Destinations["default"].Timeout, 30*time.Second)
			}},
		{name: "retry initial", field: `"retry":{"initial":%s}}`, ns: "2000000000", str: `"2s"`,
			check: func(t *testing.T, h *Ingress) {
				checkDur(t, h.source().Destinations["default"].Policy.Initial, 2*time.Second)
			}},
		{name: "retry max", field: `"retry":{"max":%s}}`, ns: "600000000000", str: `"10m"`,
			check: func(t *testing.T, h *Ingress) {
				checkDur(t, h.source().Destinations["default"].Policy.Max, 10*time.Minute)
			}},
		{name: "retry schedule", field: `"retry":{"schedule":[60000000000,%s]}}`, ns: "5400000000000", str: `"1h30m"`,
			check: func(t *testing.T, h *Ingress) {
				if got, want := h.source().Destinations["default"].Policy.Schedule, []time.Duration{time.Minute, 90 * time.Minute}; !reflect.DeepEqual(got, want) {
					t.Errorf("schedule %v, want %v", got, want)
				}
			}},
		{name: "rate_limit interval", field: `"rate_limit":{"events":50,"interval":%s}}`, ns: "1000000000", str: `"1s"`,
			check: func(t *testing.T, h *Ingress) {
				if got, want := h.source().Destinations["default"].Rate, (storage.Rate{Events: 50, Per: time.Second}); got != want {
					t.Errorf("rate %+v, want %+v", got, want)
				}
			}},
		{name: "block_failures window", field: `"block_failures":{"failures":3,"window":%s}}`, ns: "120000000000", str: `"2m"`,
			check: func(t *testing.T, h *Ingress) { checkDur(t, h.guard.window, 2*time.Minute) }},
		{name: "block_failures cooldown", field: `"block_failures":{"failures":3,"cooldown":%s}}`, ns: "86400000000000", str: `"1d"`,
			check: func(t *testing.T, h *Ingress) { checkDur(t, h.guard.cooldown, 24*time.Hour) }},
		{name: "id_from body_hash window", field: `"id_from":[{"kind":"body_hash","window":%s}]}`, ns: "600000000000", str: `"10m"`,
			check: func(t *testing.T, h *Ingress) {
				if want := []dedupe.Rule{{Kind: dedupe.KindBodyHash, Window: 10 * time.Minute}}; !reflect.DeepEqual(h.rules, want) {
					t.Errorf("rules %v, want %v", h.rules, want)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			source := strings.NewReplacer(" ", "_").Replace(tc.name)
			config := func(v string) string {
				return strings.Replace(base, "%s", source, 1) + strings.Replace(tc.field, "%s", v, 1)
			}
			fromNS := provisionSource(t, config(tc.ns))
			fromStr := provisionSource(t, config(tc.str))
			t.Cleanup(func() { fromNS.Cleanup(); fromStr.Cleanup() })
			tc.check(t, fromNS)
			tc.check(t, fromStr)
			if a, b := fromNS.source(), fromStr.source(); !reflect.DeepEqual(a, b) {
				t.Errorf("runtime source from nanoseconds %+v, from %s %+v", a, tc.str, b)
			}
			if !reflect.DeepEqual(fromNS.rules, fromStr.rules) {
				t.Errorf("rules from nanoseconds %v, from %s %v", fromNS.rules, tc.str, fromStr.rules)
			}
			if fromNS.guardKey != fromStr.guardKey {
				t.Errorf("guard from nanoseconds %q, from %s %q", fromNS.guardKey, tc.str, fromStr.guardKey)
			}
		})
	}
}

func checkDur(t *testing.T, got, want time.Duration) {
	t.Helper()
	if got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestTypeFromConfig: type_from rules from JSON compile with their joined
// parts, are checked as the Caddyfile's are, and without any the scheme's
// defaults apply.
func TestTypeFromConfig(t *testing.T) {
	const base = `{"source":"%s","verify":{"scheme":"%s"},"forward_to":"http://127.0.0.1:1/"%s}`
	cfg := func(source, scheme, extra string) string {
		return strings.Replace(strings.Replace(strings.Replace(base, "%s", source, 1), "%s", scheme, 1), "%s", extra, 1)
	}
	h := provisionSource(t, cfg("typed", "none",
		`,"type_from":[{"kind":"json","arg":"object","if_present":["entry.0.messaging"],"join":[{"kind":"const","arg":"messaging"}]},{"kind":"header","arg":"X-Event"}]`))
	want := []dedupe.TypeRule{
		dedupe.TypeOf(dedupe.JSON("object").OnlyIf("entry.0.messaging")).Joined(dedupe.Const("messaging")),
		dedupe.TypeOf(dedupe.Header("X-Event")),
	}
	if !reflect.DeepEqual(h.typeRules, want) {
		t.Errorf("type rules %v, want %v", h.typeRules, want)
	}
	if h := provisionSource(t, `{"source":"defaulted","verify":{"scheme":"github","secrets":["s"]},"forward_to":"http://127.0.0.1:1/"}`); len(h.typeRules) != 1 || h.typeRules[0].String() != "header X-GitHub-Event + json action" {
		t.Errorf("github default type rules %v, want [header X-GitHub-Event + json action]", h.typeRules)
	}
	if h := provisionSource(t, cfg("untyped", "none", "")); len(h.typeRules) != 0 {
		t.Errorf("none: type rules %v, want none", h.typeRules)
	}
	for _, bad := range []string{
		`,"type_from":[{"kind":"const","arg":"x"}]`,
		`,"type_from":[{"kind":"raw_hash"}]`,
		`,"type_from":[{"kind":"json","arg":"a","join":[{"kind":"body_hash","window":"1m"}]}]`,
		`,"type_from":[{"kind":"json"}]`,
	} {
		mod := new(Ingress)
		if err := json.Unmarshal([]byte(cfg("bad", "none", bad)), mod); err != nil {
			t.Fatal(err)
		}
		if _, err := compileTypeFrom(mod.TypeFrom); err == nil {
			t.Errorf("type_from %s: accepted", bad)
		}
	}
}

// TestSignForwardedConfig: secrets are resolved and decoded as the
// standard scheme reads them; a bad one fails provisioning without the
// secret in the error.
func TestSignForwardedConfig(t *testing.T) {
	t.Setenv("HOOKLINE_SIGN_OK", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	for _, tc := range []struct {
		name    string
		secrets []string
		ok      bool
	}{
		{"whsec", []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, true},
		{"bare base64 and a placeholder", []string{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "{env.HOOKLINE_SIGN_OK}"}, true},
		{"unset placeholder dropped", []string{"{env.HOOKLINE_SIGN_OK}", "{env.HOOKLINE_SIGN_UNSET}"}, true},
		{"not base64", []string{"whsec_not*base64*secret*value"}, false},
		{"too short", []string{"whsec_c2hvcnQ="}, false},
		{"only unset", []string{"{env.HOOKLINE_SIGN_UNSET}"}, false},
	} {
		s, err := compileSigner(tc.secrets)
		if (err == nil) != tc.ok || (tc.ok && s == nil) {
			t.Errorf("%s: signer %v err %v, want ok %v", tc.name, s, err, tc.ok)
		}
		if err != nil && (strings.Contains(err.Error(), "not*base64") || strings.Contains(err.Error(), "c2hvcnQ")) {
			t.Errorf("%s: the error shows the secret: %v", tc.name, err)
		}
	}
	if s, err := compileSigner(nil); s != nil || err != nil {
		t.Errorf("no secrets: %v %v, want no signer", s, err)
	}
}
