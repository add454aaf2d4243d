package verifiers

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookline/hookline/dedupe"
)

// TestDefaultTypesOnProviderCorpus proves every scheme's default type_from
// rules on real provider webhooks: each sample gets the type its provider
// documents (the index's "type"; "" where the provider sends none that
// the defaults read, such as a Twilio voice callback).
func TestDefaultTypesOnProviderCorpus(t *testing.T) {
	samples := loadCorpus(t)
	for _, s := range samples {
		defaulters := defaultersByScheme[s.Scheme]
		if len(defaulters) == 0 {
			t.Fatalf("sample %s: no verifier for scheme %q", s.File, s.Scheme)
		}
		for _, d := range defaulters {
			td, ok := d.(TypeDefaulter)
			if !ok {
				t.Errorf("%T has no default type_from", d)
				continue
			}
			t.Run(fmt.Sprintf("%s/%T", s.name(), d), func(t *testing.T) {
				r := httptest.NewRequest(http.MethodPost, "/hooks/"+s.Scheme, strings.NewReader(string(s.body)))
				r.Header.Set("Content-Type", s.ContentType)
				for k, v := range s.Headers {
					r.Header.Set(k, v)
				}
				if got := dedupe.ExtractType(td.DefaultTypeFrom(), r, s.body); got != s.Type {
					t.Errorf("type %q, want %q (rules %v)", got, s.Type, td.DefaultTypeFrom())
				}
			})
		}
	}
}

// TestDefaultTypeRulesValid: every default passes the checks a configured
// type_from gets.
func TestDefaultTypeRulesValid(t *testing.T) {
	for scheme, ds := range defaultersByScheme {
		for _, d := range ds {
			td, ok := d.(TypeDefaulter)
			if !ok {
				continue
			}
			for _, r := range td.DefaultTypeFrom() {
				if err := r.Validate(); err != nil {
					t.Errorf("%s %T: default %s: %v", scheme, d, r, err)
				}
			}
		}
	}
	for _, v := range []any{&HMAC{}, &None{}, &Twitter{}} {
		if _, ok := v.(TypeDefaulter); ok {
			t.Errorf("%T has default type rules; the docs give it none", v)
		}
	}
}
