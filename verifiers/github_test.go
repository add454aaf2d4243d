package verifiers

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// The official vector from GitHub's docs, "Validating webhook deliveries"
// (github/docs content/webhooks/using-webhooks/validating-webhook-deliveries.md):
// secret "It's a Secret to Everybody", payload "Hello, World!", header
// X-Hub-Signature-256: sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17.
// ghSHA1 is HMAC-SHA1 of the same payload and secret (computed independently)
// for the legacy X-Hub-Signature header.
const (
	ghSecret  = "It's a Secret to Everybody"
	ghPayload = "Hello, World!"
	ghSig     = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	ghHex     = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	ghSHA1    = "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59"
)

func provisionGitHub(t testing.TB, g GitHub) *GitHub {
	t.Helper()
	if err := g.Provision(testContext(t)); err != nil {
		t.Fatalf("provision: %v", err)
	}
	return &g
}

func TestGitHubVerify(t *testing.T) {
	one := GitHub{Secrets: []string{ghSecret}}
	sha1OK := GitHub{Secrets: []string{ghSecret}, AllowSHA1: true}
	now := time.Unix(1700000000, 0)

	for _, tc := range []struct {
		name    string
		cfg     GitHub
		headers []string
		body    string
		want    error
	}{
		{name: "official docs vector", cfg: one, headers: []string{"X-Hub-Signature-256", ghSig}, body: ghPayload},
		{name: "header name in any case", cfg: one, headers: []string{"x-hub-signature-256", ghSig}, body: ghPayload},
		{name: "wrong secret", cfg: GitHub{Secrets: []string{"It's a secret to everybody"}}, headers: []string{"X-Hub-Signature-256", ghSig}, body: ghPayload, want: ErrMismatch},
		{name: "one body byte changed", cfg: one, headers: []string{"X-Hub-Signature-256", ghSig}, body: "Hello, World?", want: ErrMismatch},
		{name: "trailing newline in body", cfg: one, headers: []string{"X-Hub-Signature-256", ghSig}, body: ghPayload + "\n", want: ErrMismatch},
		{name: "one signature digit changed", cfg: one, headers: []string{"X-Hub-Signature-256", "sha256=857107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"}, body: ghPayload, want: ErrMismatch},
		{name: "uppercase hex", cfg: one, headers: []string{"X-Hub-Signature-256", "sha256=" + strings.ToUpper(ghHex)}, body: ghPayload, want: ErrMismatch},
		{name: "truncated by one digit", cfg: one, headers: []string{"X-Hub-Signature-256", ghSig[:len(ghSig)-1]}, body: ghPayload, want: ErrFormat},
		{name: "truncated by one byte", cfg: one, headers: []string{"X-Hub-Signature-256", ghSig[:len(ghSig)-2]}, body: ghPayload, want: ErrFormat},
		{name: "extra digits", cfg: one, headers: []string{"X-Hub-Signature-256", ghSig + "00"}, body: ghPayload, want: ErrFormat},
		{name: "bare hex without prefix", cfg: one, headers: []string{"X-Hub-Signature-256", ghHex}, body: ghPayload, want: ErrFormat},
		{name: "wrong prefix", cfg: one, headers: []string{"X-Hub-Signature-256", "sha1=" + ghHex}, body: ghPayload, want: ErrFormat},
		{name: "uppercase prefix", cfg: one, headers: []string{"X-Hub-Signature-256", "SHA256=" + ghHex}, body: ghPayload, want: ErrFormat},
		{name: "prefix only", cfg: one, headers: []string{"X-Hub-Signature-256", "sha256="}, body: ghPayload, want: ErrFormat},
		{name: "missing header", cfg: one, body: ghPayload, want: ErrFormat},
		{name: "empty header", cfg: one, headers: []string{"X-Hub-Signature-256", ""}, body: ghPayload, want: ErrFormat},
		{name: "rotation: second secret matches", cfg: GitHub{Secrets: []string{"new secret", ghSecret}}, headers: []string{"X-Hub-Signature-256", ghSig}, body: ghPayload},
		{name: "rotation: no secret matches", cfg: GitHub{Secrets: []string{"new secret", "older secret"}}, headers: []string{"X-Hub-Signature-256", ghSig}, body: ghPayload, want: ErrMismatch},

		// legacy SHA-1
		{name: "sha1 refused by default", cfg: one, headers: []string{"X-Hub-Signature", ghSHA1}, body: ghPayload, want: ErrFormat},
		{name: "sha1 allowed", cfg: sha1OK, headers: []string{"X-Hub-Signature", ghSHA1}, body: ghPayload},
		{name: "sha1 allowed, wrong body", cfg: sha1OK, headers: []string{"X-Hub-Signature", ghSHA1}, body: "Hello", want: ErrMismatch},
		{name: "sha1 allowed, wrong prefix", cfg: sha1OK, headers: []string{"X-Hub-Signature", "sha256=" + ghSHA1[5:]}, body: ghPayload, want: ErrFormat},
		{name: "sha256 wins over sha1", cfg: sha1OK, headers: []string{"X-Hub-Signature-256", ghSig, "X-Hub-Signature", "sha1=" + strings.Repeat("0", 40)}, body: ghPayload},
		{name: "bad sha256 does not fall back to sha1", cfg: sha1OK, headers: []string{"X-Hub-Signature-256", "sha256=" + strings.Repeat("0", 64), "X-Hub-Signature", ghSHA1}, body: ghPayload, want: ErrMismatch},
		{name: "empty sha256 does not fall back to sha1", cfg: sha1OK, headers: []string{"X-Hub-Signature-256", "", "X-Hub-Signature", ghSHA1}, body: ghPayload, want: ErrFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := provisionGitHub(t, tc.cfg)
			err := g.Verify(newRequest(tc.headers...), []byte(tc.body), now)
			checkErr(t, err, tc.want, ghSecret, ghHex, ghSHA1[5:])
		})
	}
}

func TestGitHubProvision(t *testing.T) {
	t.Setenv("HOOKLINE_TEST_GH", ghSecret)
	for _, tc := range []struct {
		name    string
		secrets []string
		wantErr bool
	}{
		{name: "literal", secrets: []string{ghSecret}},
		{name: "env", secrets: []string{"{env.HOOKLINE_TEST_GH}"}},
		{name: "unset old secret ignored", secrets: []string{"{env.HOOKLINE_TEST_GH}", "{env.HOOKLINE_TEST_UNSET_XYZ}"}},
		{name: "none", wantErr: true},
		{name: "all empty", secrets: []string{"", "{env.HOOKLINE_TEST_UNSET_XYZ}"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := GitHub{Secrets: tc.secrets}
			err := g.Provision(testContext(t))
			if tc.wantErr {
				if err == nil {
					t.Fatal("want error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g.Secrets, tc.secrets) {
				t.Fatalf("Provision changed the configured secrets")
			}
			checkErr(t, g.Verify(newRequest("X-Hub-Signature-256", ghSig), []byte(ghPayload), time.Now()), nil)
		})
	}
}

func TestGitHubDefaultIDFrom(t *testing.T) {
	got := ruleStrings((&GitHub{}).DefaultIDFrom())
	if want := []string{"header X-GitHub-Delivery"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("DefaultIDFrom() = %v, want %v", got, want)
	}
}

func TestGitHubUnmarshalCaddyfile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		input   string
		want    GitHub
		wantErr bool
	}{
		{name: "one secret", input: `github {env.GITHUB_WEBHOOK_SECRET}`, want: GitHub{Secrets: []string{"{env.GITHUB_WEBHOOK_SECRET}"}}},
		{name: "rotation on the line", input: `github new old`, want: GitHub{Secrets: []string{"new", "old"}}},
		{name: "block", input: "github a {\n secret b\n secret c d\n allow_sha1\n}", want: GitHub{Secrets: []string{"a", "b", "c", "d"}, AllowSHA1: true}},
		{name: "block only", input: "github {\n secret {file./run/secrets/gh}\n}", want: GitHub{Secrets: []string{"{file./run/secrets/gh}"}}},
		{name: "secret without value", input: "github {\n secret\n}", wantErr: true},
		{name: "allow_sha1 takes no argument", input: "github s {\n allow_sha1 yes\n}", wantErr: true},
		{name: "unknown option", input: "github s {\n tolerance 5m\n}", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g GitHub
			err := g.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want error", g)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", g, tc.want)
			}
		})
	}
}

func TestGitHubModule(t *testing.T) {
	ctx := testContext(t)
	v, err := ctx.LoadModuleByID("webhooks.verifiers.github", json.RawMessage(`{"secrets":["It's a Secret to Everybody"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.(IDDefaulter); !ok {
		t.Fatalf("%T is not an IDDefaulter", v)
	}
	checkErr(t, v.(Verifier).Verify(newRequest("X-Hub-Signature-256", ghSig), []byte(ghPayload), time.Now()), nil)
	if _, err := ctx.LoadModuleByID("webhooks.verifiers.github", json.RawMessage(`{}`)); err == nil {
		t.Fatal("module without secrets provisioned")
	}
	if _, err := ctx.LoadModuleByID("webhooks.verifiers.github", json.RawMessage(`{"secrets":["x"],"allow_sha":true}`)); err == nil {
		t.Fatal("unknown JSON field accepted")
	}
}

// FuzzGitHubHeader feeds arbitrary X-Hub-Signature-256 values and bodies.
// Verify must never panic, must never report anything but the documented
// errors, and must accept only "sha256=" + the lowercase hex HMAC of the
// exact body.
func FuzzGitHubHeader(f *testing.F) {
	f.Add([]byte(ghPayload), ghSig)
	f.Add([]byte(ghPayload), "sha256="+strings.ToUpper(ghHex))
	f.Add([]byte(ghPayload), ghSig[:len(ghSig)-1])
	f.Add([]byte(ghPayload+" "), ghSig)
	f.Add([]byte(""), "sha256=")
	f.Add([]byte("payload=%7B%7D"), "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59")

	g := provisionGitHub(f, GitHub{Secrets: []string{ghSecret}})
	now := time.Unix(1700000000, 0)

	f.Fuzz(func(t *testing.T, body []byte, sig string) {
		r := newRequest()
		r.Header["X-Hub-Signature-256"] = []string{sig}
		err := g.Verify(r, body, now)
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrMismatch) {
				t.Fatalf("undocumented error %v", err)
			}
			if strings.Contains(err.Error(), ghSecret) {
				t.Fatalf("error leaks the secret: %v", err)
			}
			return
		}
		want := "sha256=" + EncodingHex.Encode(hmacOf(sha256.New, []byte(ghSecret), body))
		if sig != want {
			t.Fatalf("accepted %q, only %q is valid", sig, want)
		}
	})
}

func BenchmarkVerifyGitHub(b *testing.B) {
	g := provisionGitHub(b, GitHub{Secrets: []string{"bench-secret"}})
	body := verifierBenchBody()
	r := newRequest(GitHubSignatureHeader, "sha256="+EncodingHex.Encode(hmacOf(sha256.New, []byte("bench-secret"), body)))
	now := time.Unix(1700000000, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := g.Verify(r, body, now); err != nil {
			b.Fatal(err)
		}
	}
}
