// Package examples holds example Caddyfiles; this test adapts and
// validates every one of them, and Caddyfile.example at the root.
package examples

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/hookline/hookline"
)

var envPlaceholder = regexp.MustCompile(`\{env\.([A-Za-z0-9_]+)\}`)

func TestExamplesValidate(t *testing.T) {
	files, err := filepath.Glob("*/Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../Caddyfile.example")
	if len(files) < 7 {
		t.Fatalf("found only %v", files)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range envPlaceholder.FindAllStringSubmatch(string(src), -1) {
				t.Setenv(m[1], "example-secret-"+m[1])
			}
			adapter := caddyfile.Adapter{ServerType: httpcaddyfile.ServerType{}}
			cfgJSON, warnings, err := adapter.Adapt(src, map[string]any{"filename": f})
			if err != nil {
				t.Fatalf("adapt: %v", err)
			}
			for _, w := range warnings {
				t.Errorf("warning: %s", w)
			}
			var cfg caddy.Config
			if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
				t.Fatal(err)
			}
			if err := caddy.Validate(&cfg); err != nil {
				t.Fatalf("validate: %v", err)
			}
		})
	}
}
