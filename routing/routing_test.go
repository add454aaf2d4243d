package routing

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hookline/hookline/fields"
)

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, typ string
		want         bool
	}{
		{"invoice.*", "invoice.paid", true},
		{"invoice.*", "invoice.payment.failed", true}, // '*' crosses '.'
		{"invoice.*", "invoice.", true},
		{"invoice.*", "invoice", false},
		{"invoice.*", "customer.invoice.paid", false}, // anchored at the start
		{"*.created", "customer.subscription.created", true},
		{"*.created", "customer.created.late", false}, // anchored at the end
		{"orders/*", "orders/create", true},           // '*' crosses '/'
		{"orders/*", "carts/create", false},
		{"*", "anything at all", true},
		{"*", "x", true},
		{"push", "push", true},
		{"push", "pushed", false},
		{"push", "Push", false}, // case matters: types are sent as written
		{"pull_request.*", "pull_request.opened", true},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "abcabc", true},
		{"a*b*c", "acb", false},
		{"**", "x.y", true},
		{"*.*", "nodot", false},
		{"Issue Hook", "Issue Hook", true}, // GitLab's types hold spaces
	} {
		if got := Glob(tc.pattern, tc.typ); got != tc.want {
			t.Errorf("Glob(%q, %q) = %v, want %v", tc.pattern, tc.typ, got, tc.want)
		}
	}
}

func request(contentType, body string, headers map[string]string) *fields.Request {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.Header.Set("Content-Type", contentType)
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	return fields.Read(r, []byte(body))
}

func TestConditions(t *testing.T) {
	stripe := request("application/json", `{"type":"invoice.paid","livemode":true,"amount":1200,"note":null,
		"data":{"object":{"customer":"cus_1","lines":[{"id":"il_1"}],"meta":{}}}}`, map[string]string{"Stripe-Account": "acct_1"})
	form := request("application/x-www-form-urlencoded", "MessageStatus=delivered&AccountSid=AC1&Empty=", nil)
	for _, tc := range []struct {
		name string
		q    *fields.Request
		c    Condition
		want bool
	}{
		{"json bool", stripe, Condition{"json", "livemode", "true"}, true},
		{"json bool differs", stripe, Condition{"json", "livemode", "false"}, false},
		{"json number as written", stripe, Condition{"json", "amount", "1200"}, true},
		{"json nested string", stripe, Condition{"json", "data.object.customer", "cus_1"}, true},
		{"json array index", stripe, Condition{"json", "data.object.lines.0.id", "il_1"}, true},
		{"json null", stripe, Condition{"json", "note", "null"}, true},
		{"json object never matches", stripe, Condition{"json", "data.object.meta", "{}"}, false},
		{"json missing", stripe, Condition{"json", "data.object.nothing", ""}, false},
		{"header", stripe, Condition{"header", "Stripe-Account", "acct_1"}, true},
		{"header name any case", stripe, Condition{"header", "stripe-account", "acct_1"}, true},
		{"header missing", stripe, Condition{"header", "X-Other", ""}, false},
		{"form", form, Condition{"form", "AccountSid", "AC1"}, true},
		{"form empty but present", form, Condition{"form", "Empty", ""}, true},
		{"form missing", form, Condition{"form", "To", ""}, false},
		{"form of a JSON body", stripe, Condition{"form", "type", "invoice.paid"}, false},
		{"json of a form body", form, Condition{"json", "MessageStatus", "delivered"}, false},
	} {
		if got := tc.c.Holds(tc.q); got != tc.want {
			t.Errorf("%s: %+v holds = %v, want %v", tc.name, tc.c, got, tc.want)
		}
	}
}

func TestMatcher(t *testing.T) {
	q := request("application/json", `{"data":{"object":{"livemode":true}}}`, nil)
	live := Condition{"json", "data.object.livemode", "true"}
	test := Condition{"json", "data.object.livemode", "false"}
	for _, tc := range []struct {
		name string
		m    Matcher
		typ  string
		want bool
	}{
		{"no filter takes everything", Matcher{}, "invoice.paid", true},
		{"no filter takes an untyped event", Matcher{}, "", true},
		{"events: one glob of several", Matcher{Events: []string{"customer.*", "invoice.*"}}, "invoice.paid", true},
		{"events: none matches", Matcher{Events: []string{"customer.*"}}, "invoice.paid", false},
		{"events never take an untyped event", Matcher{Events: []string{"*"}}, "", false},
		{"when holds", Matcher{When: []Condition{live}}, "", true},
		{"when: all must hold", Matcher{When: []Condition{live, test}}, "invoice.paid", false},
		{"events and when", Matcher{Events: []string{"invoice.*"}, When: []Condition{live}}, "invoice.paid", true},
		{"events match, when does not", Matcher{Events: []string{"invoice.*"}, When: []Condition{test}}, "invoice.paid", false},
	} {
		if got := tc.m.Match(tc.typ, q); got != tc.want {
			t.Errorf("%s: Match = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		m  Matcher
		ok bool
	}{
		{Matcher{}, true},
		{Matcher{Events: []string{"invoice.*"}, When: []Condition{{"header", "X-A", "b"}}}, true},
		{Matcher{Events: []string{""}}, false},
		{Matcher{Events: []string{"bad\x00glob"}}, false},
		{Matcher{When: []Condition{{"body", "x", "y"}}}, false},
		{Matcher{When: []Condition{{"json", "", "y"}}}, false},
	} {
		if err := tc.m.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: Validate = %v, want ok %v", tc.m, err, tc.ok)
		}
	}
}

// TestGlobsOnProviderCorpus routes the provider corpus (testdata/providers:
// real samples, each with the type its provider documents and that
// verifiers' TestDefaultTypesOnProviderCorpus proves the defaults find) by
// the globs users write, and checks which samples each destination takes.
func TestGlobsOnProviderCorpus(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "providers", "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index struct {
		Samples []struct{ Scheme, Type string } `json:"samples"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		scheme string
		events []string
		want   []string // the distinct types taken, sorted
	}{
		{"stripe", []string{"invoice.*"}, []string{"invoice.created", "invoice.finalized", "invoice.paid"}},
		// "*" takes dots too: customer.* takes a Connect subscription's customer.subscription.created
		{"stripe", []string{"customer.*"}, []string{"customer.created", "customer.subscription.created", "customer.updated"}},
		{"stripe", []string{"*.created"}, []string{"customer.created", "customer.subscription.created", "invoice.created"}},
		{"stripe", []string{"payment_intent.*", "account.updated"}, []string{"account.updated", "payment_intent.succeeded"}},
		{"github", []string{"push"}, []string{"push"}},
		{"github", []string{"issue_comment.*", "star.*"}, []string{"issue_comment.created", "star.created"}},
		{"shopify", []string{"carts/*"}, []string{"carts/create", "carts/update"}},
		{"meta", []string{"whatsapp_business_account.*"}, []string{"whatsapp_business_account.messages"}},
		{"meta", []string{"*.messaging"}, []string{"instagram.messaging", "page.messaging"}},
		{"gitlab", []string{"* Hook"}, []string{"Issue Hook", "Note Hook", "Push Hook", "Tag Push Hook"}},
		{"paddle", []string{"transaction.c*"}, []string{"transaction.completed", "transaction.created"}},
		{"twilio", []string{"*"}, []string{"delivered", "read", "sent", "undelivered"}}, // the untyped voice callback is not taken
		{"standard", []string{"*"}, []string{"contact.created"}},
	} {
		m := Matcher{Events: tc.events}
		var got []string
		seen := 0
		for _, s := range index.Samples {
			if s.Scheme != tc.scheme {
				continue
			}
			seen++
			if m.Match(s.Type, nil) && !slices.Contains(got, s.Type) {
				got = append(got, s.Type)
			}
		}
		if seen == 0 {
			t.Fatalf("the corpus has no %s sample", tc.scheme)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s events %q took %q, want %q", tc.scheme, tc.events, got, tc.want)
		}
	}
}

// FuzzGlob checks Glob against the regular expression the glob stands
// for: '*' is ".*" (any run, newlines included), everything else itself.
func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{{"invoice.*", "invoice.paid"}, {"a*b*c", "abcabc"}, {"*", ""}, {"**x", "yx"}, {"orders/*", "orders/create"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, typ string) {
		parts := strings.Split(pattern, "*")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		re, err := regexp.Compile(`^(?s:` + strings.Join(parts, ".*") + `)$`)
		if err != nil {
			t.Skip() // not valid UTF-8: no regexp to compare with
		}
		if got, want := Glob(pattern, typ), re.MatchString(typ); got != want && utf8.ValidString(pattern) && utf8.ValidString(typ) {
			t.Errorf("Glob(%q, %q) = %v, regexp says %v", pattern, typ, got, want)
		}
	})
}
