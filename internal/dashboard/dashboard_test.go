package dashboard_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/hookline/hookline/internal/dashboard"
)

// TestDashboardAssetsOffline: the page loads nothing from elsewhere.
func TestDashboardAssetsOffline(t *testing.T) {
	for _, name := range []string{"index.html", "app.js", "app.css", "charts.js", "charts.css", "events.js"} {
		b, err := os.ReadFile(filepath.Join("page", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"http:", "https:", "//cdn", "@import", ".innerHTML", "insertAdjacentHTML", "document.write", "eval("} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
	}
}

func TestDashboardCaddyfile(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"webhook_dashboard", true},
		{"webhook_dashboard extra", false},
		{"webhook_dashboard {\n\tfoo\n}", false},
	} {
		var d dashboard.Dashboard
		err := d.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.in))
		if (err == nil) != tc.ok {
			t.Errorf("%q: err %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}
