package dedupe

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookline/hookline/fields"
)

func TestValidateTenantRule(t *testing.T) {
	for _, tc := range []struct {
		rule Rule
		err  string
	}{
		{Header("X-Shopify-Shop-Domain"), ""},
		{JSON("entry.0.id").Unless("entry.1"), ""},
		{Form("AccountSid"), ""},
		{Rule{Kind: KindBodyHash, Window: 1}, "tenant_from takes header, json or form"},
		{RawHash("X-A"), "tenant_from takes header, json or form"},
		{Const("acme"), "tenant_from takes header, json or form"},
		{Rule{Kind: KindJSON}, "needs an argument"},
		{Rule{Kind: KindJSON, Arg: "a", Window: 1}, "takes no window"},
		{JSON("a").OnlyIf(""), "empty JSON path"},
	} {
		err := ValidateTenantRule(tc.rule)
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want %q", tc.rule, err, tc.err)
		}
	}
}

func TestFindTenant(t *testing.T) {
	read := func(body string, header map[string]string) *fields.Request {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			r.Header.Set(k, v)
		}
		return fields.Read(r, []byte(body))
	}
	meta := []Rule{JSON("entry.0.id").Unless("entry.1")}
	for _, tc := range []struct {
		name  string
		q     *fields.Request
		rules []Rule
		want  string
	}{
		{"a header", read(`{}`, map[string]string{"X-Shop": " shop.myshopify.com "}), []Rule{Header("X-Shop")}, "shop.myshopify.com"},
		{"a number as written", read(`{"installation":{"id":12345}}`, nil), []Rule{JSON("installation.id")}, "12345"},
		{"the first rule that finds one", read(`{"b":"2"}`, nil), []Rule{JSON("a"), JSON("b")}, "2"},
		{"none", read(`{}`, nil), []Rule{JSON("account")}, ""},
		{"no rules", read(`{"account":"acct_1"}`, nil), nil, ""},
		{"one entry", read(`{"entry":[{"id":"p1"}]}`, nil), meta, "p1"},
		{"two entries: none (they may be two accounts)", read(`{"entry":[{"id":"p1"},{"id":"p2"}]}`, nil), meta, ""},
		{"normalized as an id is", read(`{"t":"a\nb"}`, nil), []Rule{JSON("t")}, Normalize("a\nb")},
	} {
		if got := FindTenant(tc.q, tc.rules); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
