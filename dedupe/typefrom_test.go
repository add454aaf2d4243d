package dedupe

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestExtractType(t *testing.T) {
	github := []TypeRule{TypeOf(Header("X-GitHub-Event")).Joined(JSON("action"))}
	meta := []TypeRule{
		TypeOf(JSON("object").OnlyIf("entry.0.changes.0.field")).Joined(JSON("entry.0.changes.0.field")),
		TypeOf(JSON("object").OnlyIf("entry.0.messaging")).Joined(Const("messaging")),
		TypeOf(JSON("object")),
	}
	slack := []TypeRule{TypeOf(JSON("event.type")), TypeOf(JSON("type"))}
	for _, tc := range []struct {
		name    string
		rules   []TypeRule
		headers map[string]string
		ct      string
		body    string
		want    string
	}{
		{"github push has no action", github, map[string]string{"X-GitHub-Event": "push"}, "", `{"ref":"x"}`, "push"},
		{"github action joined", github, map[string]string{"X-GitHub-Event": "pull_request"}, "", `{"action":"opened"}`, "pull_request.opened"},
		{"github no header: no type", github, nil, "", `{"action":"opened"}`, ""},
		{"github non-string action ignored", github, map[string]string{"X-GitHub-Event": "x"}, "", `{"action":{"a":1}}`, "x"},
		{"meta changes field", meta, nil, "", `{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages"}]}]}`, "whatsapp_business_account.messages"},
		{"meta messaging const", meta, nil, "", `{"object":"page","entry":[{"messaging":[{}]}]}`, "page.messaging"},
		{"meta object alone", meta, nil, "", `{"object":"page","entry":[{}]}`, "page"},
		{"slack inner type first", slack, nil, "", `{"type":"event_callback","event":{"type":"message"}}`, "message"},
		{"slack outer type", slack, nil, "", `{"type":"url_verification"}`, "url_verification"},
		{"form field", []TypeRule{TypeOf(Form("MessageStatus")), TypeOf(Form("SmsStatus"))}, nil, "application/x-www-form-urlencoded", "SmsStatus=sent", "sent"},
		{"not printable: next rule", []TypeRule{TypeOf(JSON("a")), TypeOf(JSON("b"))}, nil, "", `{"a":"line\nbreak","b":"ok"}`, "ok"},
		{"too long: nothing", []TypeRule{TypeOf(JSON("a"))}, nil, "", `{"a":"` + strings.Repeat("x", MaxIDLen+1) + `"}`, ""},
		{"not JSON", []TypeRule{TypeOf(JSON("type"))}, nil, "", `type=x`, ""},
		{"no rules", nil, nil, "", `{"type":"x"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", strings.NewReader(tc.body))
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			if tc.ct != "" {
				r.Header.Set("Content-Type", tc.ct)
			}
			if got := ExtractType(tc.rules, r, []byte(tc.body)); got != tc.want {
				t.Errorf("ExtractType = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTypeRuleValidate(t *testing.T) {
	for _, tc := range []struct {
		rule TypeRule
		ok   bool
	}{
		{TypeOf(JSON("type")), true},
		{TypeOf(Header("X-Shopify-Topic")), true},
		{TypeOf(Form("MessageStatus")), true},
		{TypeOf(JSON("object")).Joined(Const("messaging")), true},
		{TypeOf(Const("x")), false}, // a const alone would type every event alike
		{TypeOf(RawHash()), false},
		{TypeOf(Rule{Kind: KindBodyHash, Window: 1}), false},
		{TypeOf(JSON("")), false},
		{TypeOf(JSON("a").OnlyIf("")), false},
		{TypeOf(JSON("a")).Joined(Header("")), false},
		{TypeOf(JSON("a")).Joined(RawHash()), false},
	} {
		if err := tc.rule.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok %v", tc.rule, err, tc.ok)
		}
	}
	if _, err := ParseTypeRule("json", "type"); err != nil {
		t.Errorf("ParseTypeRule(json type) = %v", err)
	}
	if _, err := ParseTypeRule("body_hash", "5m"); err == nil {
		t.Error("ParseTypeRule(body_hash) accepted")
	}
}

func TestExtractIgnoresConst(t *testing.T) {
	r := httptest.NewRequest("POST", "/", strings.NewReader(`{}`))
	if got := Extract([]Rule{{Kind: KindConst, Arg: "same-for-all"}}, r, []byte(`{}`), time.Now()); got != "" {
		t.Errorf("a const id rule gave id %q: it would merge every event", got)
	}
}
