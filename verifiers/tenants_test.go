package verifiers

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/fields"
)

// TestDefaultTenantsOnProviderSamples proves every scheme's default
// tenant_from rules on real provider webhooks: each sample gets the
// account its provider names (index.json's "tenant"), or none where it
// names none or a batch may carry several; and every scheme with a
// default finds one in at least two samples, so that no default is
// proven only by finding nothing.
func TestDefaultTenantsOnProviderSamples(t *testing.T) {
	found := map[string]int{}
	for _, s := range loadCorpus(t) {
		for _, d := range defaultersByScheme[s.Scheme] {
			var rules []IDRule
			if td, ok := d.(TenantDefaulter); ok {
				rules = td.DefaultTenantFrom()
			}
			r := httptest.NewRequest(http.MethodPost, "/hooks/"+s.Scheme, strings.NewReader(string(s.body)))
			r.Header.Set("Content-Type", s.ContentType)
			for k, v := range s.Headers {
				r.Header.Set(k, v)
			}
			got := dedupe.FindTenant(fields.Read(r, s.body), rules)
			if got != s.Tenant {
				t.Errorf("%T on %s: tenant %q, want %q", d, s.name(), got, s.Tenant)
			}
			if got != "" {
				found[fmt.Sprintf("%T", d)]++
			}
		}
	}
	for scheme, ds := range defaultersByScheme {
		for _, d := range ds {
			if td, ok := d.(TenantDefaulter); ok && len(td.DefaultTenantFrom()) > 0 && found[fmt.Sprintf("%T", d)] < 2 {
				t.Errorf("%s (%T): its default tenant_from finds a tenant in %d samples, want at least 2", scheme, d, found[fmt.Sprintf("%T", d)])
			}
		}
	}
}

// Every default tenant rule passes the checks a configured one gets.
func TestDefaultTenantRulesValid(t *testing.T) {
	for scheme, ds := range defaultersByScheme {
		for _, d := range ds {
			td, ok := d.(TenantDefaulter)
			if !ok {
				continue
			}
			for _, r := range td.DefaultTenantFrom() {
				if err := dedupe.ValidateTenantRule(r); err != nil {
					t.Errorf("%s (%T): %s: %v", scheme, d, r, err)
				}
			}
		}
	}
}
