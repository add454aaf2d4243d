package verifiers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/dedupe"
)

// ruleStrings writes rules in their Caddyfile form, for comparisons.
func ruleStrings(rules []IDRule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.String()
	}
	return out
}

// corpusDir holds real provider webhooks (see its SOURCES.md and index.json).
const corpusDir = "../testdata/providers"

type corpusSample struct {
	Scheme      string            `json:"scheme"`
	File        string            `json:"file"`
	ContentType string            `json:"content_type"`
	Headers     map[string]string `json:"headers"`
	Event       string            `json:"event"`
	Type        string            `json:"type"`
	Tenant      string            `json:"tenant"`
	Source      string            `json:"source"`
	Constructed bool              `json:"constructed"`
	Note        string            `json:"note"`

	body []byte
}

func (s corpusSample) name() string {
	n := s.File
	if len(s.Headers) > 0 {
		keys := make([]string, 0, len(s.Headers))
		for k := range s.Headers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		n += " [" + strings.Join(keys, ",") + "]"
	}
	return n
}

func loadCorpus(t *testing.T) []corpusSample {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(corpusDir, "index.json"))
	if err != nil {
		t.Fatalf("reading the corpus index: %v", err)
	}
	var index struct {
		Samples []corpusSample `json:"samples"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatalf("parsing the corpus index: %v", err)
	}
	sources, err := os.ReadFile(filepath.Join(corpusDir, "SOURCES.md"))
	if err != nil {
		t.Fatalf("reading the corpus sources: %v", err)
	}
	for i := range index.Samples {
		s := &index.Samples[i]
		if s.Scheme == "" || s.File == "" || s.Event == "" || s.ContentType == "" {
			t.Fatalf("sample %d (%s): scheme, file, event and content_type are required", i, s.File)
		}
		if s.Source == "" || !strings.Contains(string(sources), "`"+s.Source+"`") {
			t.Fatalf("sample %s: source %q is not described in SOURCES.md", s.File, s.Source)
		}
		if s.body, err = os.ReadFile(filepath.Join(corpusDir, filepath.FromSlash(s.File))); err != nil {
			t.Fatalf("sample %s: %v", s.File, err)
		}
	}
	return index.Samples
}

// defaultersByScheme are the verifiers whose DefaultIDFrom the corpus
// checks, under the scheme names of the index (aliases included).
var defaultersByScheme = map[string][]IDDefaulter{
	"stripe":   {&Stripe{}},
	"github":   {&GitHub{}},
	"gitlab":   {&GitLab{}},
	"standard": {&Standard{}, &Svix{}},
	"shopify":  {&Shopify{}},
	"slack":    {&Slack{}},
	"paddle":   {&Paddle{}},
	"sendgrid": {&SendGrid{}},
	"twilio":   {&Twilio{}},
	"meta":     {&Meta{}, &Facebook{}, &WhatsApp{}, &Instagram{}},
	"zoom":     {&Zoom{}},
	"msgraph":  {&MSGraph{}},
}

// extractDefault finds the id of one delivery of s the way the ingress
// does when the source sets no id_from: the verifier's DefaultIDFrom rules
// applied by dedupe.Extract to the request and its exact body.
func extractDefault(d IDDefaulter, s corpusSample, now time.Time) string {
	r := httptest.NewRequest(http.MethodPost, "/hooks/"+s.Scheme, strings.NewReader(string(s.body)))
	r.Header.Set("Content-Type", s.ContentType)
	for k, v := range s.Headers {
		r.Header.Set(k, v)
	}
	return dedupe.Extract(d.DefaultIDFrom(), r, append([]byte(nil), s.body...), now)
}

// TestDefaultIDsOnProviderCorpus proves every scheme's default id rules on
// real provider webhooks: every delivery gets an id that can travel in a
// header, a byte-identical resend (later, same headers) gets the same id,
// deliveries of one event that the provider marks as such (same delivery
// header, same event id) get the same id, and distinct events never do.
func TestDefaultIDsOnProviderCorpus(t *testing.T) {
	samples := loadCorpus(t)
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	byScheme := map[string][]corpusSample{}
	for _, s := range samples {
		if _, ok := defaultersByScheme[s.Scheme]; !ok {
			t.Fatalf("sample %s: no verifier for scheme %q", s.File, s.Scheme)
		}
		byScheme[s.Scheme] = append(byScheme[s.Scheme], s)
	}
	for scheme, defaulters := range defaultersByScheme {
		group := byScheme[scheme]
		if len(group) < 2 {
			t.Errorf("%s: the corpus has %d samples, want at least two distinct events", scheme, len(group))
			continue
		}
		for _, d := range defaulters {
			t.Run(strings.TrimPrefix(fmt.Sprintf("%T", d), "*verifiers."), func(t *testing.T) {
				checkCorpusIDs(t, d, group, now)
			})
		}
	}
}

// checkCorpusIDs checks d's default rules on the samples of one scheme.
func checkCorpusIDs(t *testing.T, d IDDefaulter, group []corpusSample, now time.Time) {
	t.Helper()
	if len(d.DefaultIDFrom()) == 0 {
		// no default (msgraph): every delivery gets a generated id and is
		// never deduplicated, so nothing can be merged
		for _, s := range group {
			if id := extractDefault(d, s, now); id != "" {
				t.Errorf("%s: id %q from no rule", s.name(), id)
			}
		}
		return
	}
	ids := make([]string, len(group))
	for i, s := range group {
		ids[i] = extractDefault(d, s, now)
		if ids[i] == "" {
			t.Errorf("%s: no id (rules %q)", s.name(), ruleStrings(d.DefaultIDFrom()))
			continue
		}
		if ids[i] != dedupe.Normalize(ids[i]) {
			t.Errorf("%s: id %q cannot travel in a header", s.name(), ids[i])
		}
		// a byte-identical resend, ten minutes later
		if again := extractDefault(d, s, now.Add(10*time.Minute)); again != ids[i] {
			t.Errorf("%s: byte-identical resend got id %q, first delivery %q", s.name(), again, ids[i])
		}
	}
	for i := range group {
		for j := i + 1; j < len(group); j++ {
			a, b := group[i], group[j]
			same := ids[i] == ids[j] && ids[i] != ""
			switch {
			case a.Event == b.Event && !same:
				t.Errorf("%s and %s are deliveries of one event (%s) but got ids %q and %q", a.name(), b.name(), a.Event, ids[i], ids[j])
			case a.Event != b.Event && same:
				t.Errorf("distinct events merged: %s (%s) and %s (%s) both got id %q", a.name(), a.Event, b.name(), b.Event, ids[i])
			}
		}
	}
}

// TestMetaDefaultIDKinds pins which rule gives the id of each Meta sample:
// the message id only for a notification carrying one message and nothing
// else, a hash of the exact bytes for everything else.
func TestMetaDefaultIDKinds(t *testing.T) {
	samples := loadCorpus(t)
	want := map[string]string{ // file -> id, or "rh:" for the raw hash
		"meta/whatsapp_text_docs.json":         "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=",
		"meta/whatsapp_text_pywa.json":         "wamid.xyzxyz",
		"meta/whatsapp_edit_pywa.json":         "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUFERjg0NDEzNDdFODU3MUMxMAA=",
		"meta/whatsapp_status_sent.json":       "rh:",
		"meta/whatsapp_status_delivered.json":  "rh:",
		"meta/whatsapp_status_read.json":       "rh:",
		"meta/whatsapp_status_played.json":     "rh:",
		"meta/whatsapp_status_failed.json":     "rh:",
		"meta/whatsapp_text_and_status.json":   "rh:",
		"meta/whatsapp_two_entries.json":       "rh:",
		"meta/messenger_text.json":             "mid.1457764197618:41d102a3e1ae206a38",
		"meta/messenger_delivery.json":         "rh:",
		"meta/messenger_postback.json":         "rh:",
		"meta/messenger_optin.json":            "rh:",
		"meta/messenger_read.json":             "rh:",
		"meta/messenger_read_later.json":       "rh:",
		"meta/messenger_message_and_read.json": "rh:",
		"meta/instagram_unsend.json":           "rh:",
		"meta/instagram_comment.json":          "rh:",
		"meta/instagram_comment_second.json":   "rh:",
		"meta/instagram_story_insights.json":   "rh:",
	}
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	seen := 0
	for _, s := range samples {
		if s.Scheme != "meta" {
			continue
		}
		w, ok := want[s.File]
		if !ok {
			t.Errorf("%s: no expectation for this meta sample", s.File)
			continue
		}
		seen++
		got := extractDefault(&Meta{}, s, now)
		if w == "rh:" {
			if !strings.HasPrefix(got, "rh:") || len(got) != len("rh:")+64 {
				t.Errorf("%s: id %q, want the hash of the exact bytes", s.File, got)
			}
		} else if got != w {
			t.Errorf("%s: id %q, want %q", s.File, got, w)
		}
	}
	if seen != len(want) {
		t.Errorf("%d meta samples checked, %d expected", seen, len(want))
	}
}
