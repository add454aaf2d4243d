package ingress_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// TestProvidersDocAdapts: every recipe of docs/providers.md is a whole
// webhook_ingress block that the Caddyfile adapter takes without an error
// or a warning, with the scheme its verify line names
// (verifiers/providers_test.go proves each verify directive against the
// provider's signing).
func TestProvidersDocAdapts(t *testing.T) {
	raw, err := os.ReadFile("../../docs/providers.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)\n<!-- recipe: ([a-z0-9_-]+) -->\n```caddyfile\n(.*?)\n```").FindAllStringSubmatch(string(raw), -1)
	if len(blocks) < 15 {
		t.Fatalf("%d recipes", len(blocks))
	}
	verifyLine := regexp.MustCompile(`(?m)^\s*verify (\S+)`)
	for _, b := range blocks {
		t.Run(b[1], func(t *testing.T) {
			site := ":8080 {\n\t" + strings.ReplaceAll(b[2], "\n", "\n\t") + "\n}\n"
			out, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(site), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) > 0 {
				t.Fatalf("warnings: %v", warnings)
			}
			m := verifyLine.FindStringSubmatch(b[2])
			if m == nil {
				t.Fatal("no verify line")
			}
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
			if got := cfg.Apps.HTTP.Servers["srv0"].Routes[0].Handle[0].Verify.Scheme; got != m[1] {
				t.Fatalf("scheme %q, want %q in %s", got, m[1], strings.TrimSpace(string(out)))
			}
		})
	}
}
