package verifiers

import (
	"strings"
	"testing"
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

func TestGitHubVerify(t *testing.T) {
	one := GitHub{SecretsConfig: keyed(ghSecret)}
	sha1OK := GitHub{SecretsConfig: keyed(ghSecret), AllowSHA1: true}

	runVerifyCases(t, newRequest, []verifyCase[GitHub]{
		{name: "official docs vector", cfg: one, headers: []string{"X-Hub-Signature-256", ghSig}, body: ghPayload},
		{name: "secret in another letter case", cfg: GitHub{SecretsConfig: keyed("It's a secret to everybody")}, headers: []string{"X-Hub-Signature-256", ghSig}, body: ghPayload, want: ErrMismatch},
		{name: "trailing newline in body", cfg: one, headers: []string{"X-Hub-Signature-256", ghSig}, body: ghPayload + "\n", want: ErrMismatch},
		{name: "wrong prefix", cfg: one, headers: []string{"X-Hub-Signature-256", "sha1=" + ghHex}, body: ghPayload, want: ErrFormat},

		// legacy SHA-1
		{name: "sha1 refused by default", cfg: one, headers: []string{"X-Hub-Signature", ghSHA1}, body: ghPayload, want: ErrFormat},
		{name: "sha1 allowed", cfg: sha1OK, headers: []string{"X-Hub-Signature", ghSHA1}, body: ghPayload},
		{name: "sha1 allowed, wrong body", cfg: sha1OK, headers: []string{"X-Hub-Signature", ghSHA1}, body: "Hello", want: ErrMismatch},
		{name: "sha1 allowed, wrong prefix", cfg: sha1OK, headers: []string{"X-Hub-Signature", "sha256=" + ghSHA1[5:]}, body: ghPayload, want: ErrFormat},
		{name: "sha256 wins over sha1", cfg: sha1OK, headers: []string{"X-Hub-Signature-256", ghSig, "X-Hub-Signature", "sha1=" + strings.Repeat("0", 40)}, body: ghPayload},
		{name: "bad sha256 does not fall back to sha1", cfg: sha1OK, headers: []string{"X-Hub-Signature-256", "sha256=" + strings.Repeat("0", 64), "X-Hub-Signature", ghSHA1}, body: ghPayload, want: ErrMismatch},
		{name: "empty sha256 does not fall back to sha1", cfg: sha1OK, headers: []string{"X-Hub-Signature-256", "", "X-Hub-Signature", ghSHA1}, body: ghPayload, want: ErrFormat},
	}, ghSecret, ghHex, ghSHA1[5:])
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
	g := provision(f, GitHub{SecretsConfig: keyed(ghSecret)})
	fuzzBodyHMAC(f, g, "X-Hub-Signature-256", "sha256=", EncodingHex, ghSecret)
}
