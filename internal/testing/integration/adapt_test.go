package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddytest"
)

// TestCaddyfileAdapt adapts every testdata/caddyfile_adapt/*.caddyfiletest
// and compares the result with the JSON after the "----------" line, as
// caddy's caddytest/integration/caddyfile_adapt_test.go does. When the
// expected part does not start with "{", it is a substring of the error the
// adapter must return.
func TestCaddyfileAdapt(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "caddyfile_adapt", "*.caddyfiletest"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/caddyfile_adapt/*.caddyfiletest files")
	}

	winNewlines := regexp.MustCompile(`\r?\n`)

	for _, path := range files {
		filename := filepath.Base(path)
		t.Run(filename, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("reading %s: %v", path, err)
			}

			// split the Caddyfile (first) and JSON (second) parts
			// (append newline to Caddyfile to match formatter expectations)
			parts := strings.Split(string(data), "----------")
			if len(parts) != 2 {
				t.Fatalf("%s: want one ---------- line, found %d", filename, len(parts)-1)
			}
			caddyfileText, expected := strings.TrimSpace(parts[0])+"\n", strings.TrimSpace(parts[1])
			expected = winNewlines.ReplaceAllString(expected, "\n")

			if len(expected) > 0 && expected[0] == '{' {
				if !caddytest.CompareAdapt(t, filename, caddyfileText, "caddyfile", expected) {
					t.Errorf("failed to adapt %s", filename)
				}
				return
			}

			_, _, err = caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfileText), nil)
			if err == nil {
				t.Fatalf("expected an error for %s but got none", filename)
			}
			if got := winNewlines.ReplaceAllString(err.Error(), "\n"); !strings.Contains(got, expected) {
				t.Errorf("expected error for %s to contain:\n%s\nbut got:\n%s", filename, expected, got)
			}
		})
	}
}
