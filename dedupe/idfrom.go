package dedupe

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hookline/hookline/fields"
)

// The kinds of id_from rules.
const (
	KindHeader   = fields.Header // a request header
	KindJSON     = fields.JSON   // a dot path into the JSON body
	KindForm     = fields.Form   // a field of a url-encoded form body
	KindBodyHash = "body_hash"   // hash of the normalized body plus a time bucket
	KindRawHash  = "raw_hash"    // hash of the exact received bytes, no window
	// KindConst is a fixed text, for type_from's joined parts only (the
	// "messaging" of Meta's "page.messaging"); it is never an id.
	KindConst = "const"
)

// IsFieldKind reports whether kind names one field of a request (header,
// json or form): the kinds that routing conditions and order keys read.
//
// Deprecated: use fields.IsKind.
func IsFieldKind(kind string) bool { return fields.IsKind(kind) }

// Rule is one id_from rule: where to find a webhook's event ID.
//
//	header <name>
//	json <dot.path>        # array indices allowed: entry.0.id
//	form <field>
//	body_hash <window>     # hash of the normalized JSON (or raw body) + time bucket
//	raw_hash               # hash of the exact received bytes (no window)
//
// raw_hash and conditions come from scheme defaults (and JSON config); the
// Caddyfile's id_from takes one kind and one argument. Rule is the runtime
// form, free of Caddy: the webhook_ingress handler's JSON config
// (ingress.IDRule) compiles into it.
//
// A rule may carry conditions on the JSON body: it applies only when every
// path in IfPresent holds a value and every path in IfAbsent does not (a
// missing key, an index past the end of an array and null are absent;
// anything else, even "" or [], is present). A rule that does not apply is
// skipped as if it had found nothing. This is how a default takes a field
// only from notifications where that field names the one event carried
// ("messages.0.id, unless the notification also carries statuses").
//
// raw_hash is for providers with no delivery id: two deliveries of one
// event are merged only when they are byte-identical, and two distinct
// events are never merged unless the provider sends them byte for byte
// alike. An empty body gives no id.
type Rule struct {
	// Kind is one of the Kind constants.
	Kind string
	// Arg is the header name, JSON path or form field (raw_hash: the
	// headers hashed with the body, comma-separated).
	Arg string
	// Window is the time bucket of body_hash (body_hash only).
	Window time.Duration

	// IfPresent: JSON paths that must each hold a value for the rule to apply.
	IfPresent []string
	// IfAbsent: JSON paths that must each be missing or null for the rule to apply.
	IfAbsent []string
}

// Header is the rule "header <name>".
func Header(name string) Rule { return Rule{Kind: KindHeader, Arg: name} }

// JSON is the rule "json <path>".
func JSON(path string) Rule { return Rule{Kind: KindJSON, Arg: path} }

// Form is the rule "form <field>".
func Form(field string) Rule { return Rule{Kind: KindForm, Arg: field} }

// RawHash is the rule "raw_hash": the SHA-256 of the exact received bytes,
// and of the values of the given headers when there are any (a delivery
// id the provider keeps across its retries but that may repeat for
// distinct events, such as GitLab's X-Gitlab-Event-UUID: together with the
// bytes it tells apart two events whose bodies are the same).
func RawHash(headers ...string) Rule { return Rule{Kind: KindRawHash, Arg: strings.Join(headers, ",")} }

// OnlyIf returns r applying only when every one of the JSON paths holds a value.
func (r Rule) OnlyIf(paths ...string) Rule {
	r.IfPresent = append(slices.Clip(r.IfPresent), paths...)
	return r
}

// Unless returns r applying only when none of the JSON paths holds a value.
func (r Rule) Unless(paths ...string) Rule {
	r.IfAbsent = append(slices.Clip(r.IfAbsent), paths...)
	return r
}

// String writes the rule as its words ("json id"), each condition after
// them as "if <path>" or "unless <path>", for messages and tests.
func (r Rule) String() string {
	var b strings.Builder
	b.WriteString(r.Kind)
	switch {
	case r.Kind == KindBodyHash:
		b.WriteString(" " + r.Window.String())
	case r.Arg != "":
		b.WriteString(" " + r.Arg)
	}
	for _, p := range r.IfPresent {
		b.WriteString(" if " + p)
	}
	for _, p := range r.IfAbsent {
		b.WriteString(" unless " + p)
	}
	return b.String()
}

// ParseRule builds a rule from its Caddyfile words.
func ParseRule(kind, arg string) (Rule, error) {
	r := Rule{Kind: kind, Arg: arg}
	switch kind {
	case KindHeader, KindJSON, KindForm:
		if arg == "" {
			return r, fmt.Errorf("id_from %s needs an argument", kind)
		}
	case KindBodyHash:
		if arg == "" {
			return r, fmt.Errorf("id_from body_hash needs a window, such as 5m")
		}
		d, err := time.ParseDuration(arg)
		if err != nil || d <= 0 {
			return r, fmt.Errorf("id_from body_hash: invalid window %q", arg)
		}
		r.Window, r.Arg = d, ""
	case KindRawHash: // arg: headers hashed with the body, comma-separated (optional)
		for h := range strings.SplitSeq(arg, ",") {
			if arg != "" && strings.TrimSpace(h) == "" {
				return r, fmt.Errorf("id_from raw_hash: empty header name in %q", arg)
			}
		}
	default:
		return r, fmt.Errorf("unknown id_from kind %q (want header, json, form, body_hash or raw_hash)", kind)
	}
	return r, nil
}

// Validate checks a rule built in code or decoded from JSON config as
// ParseRule checks Caddyfile words, and that its condition paths are not
// empty.
func (r Rule) Validate() error {
	arg := r.Arg
	if r.Kind == KindBodyHash {
		if r.Arg != "" || r.Window <= 0 {
			return fmt.Errorf("id_from body_hash needs a positive window")
		}
		arg = r.Window.String()
	} else if r.Window != 0 {
		return fmt.Errorf("id_from %s takes no window", r.Kind)
	}
	if _, err := ParseRule(r.Kind, arg); err != nil {
		return err
	}
	for _, p := range slices.Concat(r.IfPresent, r.IfAbsent) {
		if p == "" {
			return fmt.Errorf("id_from %s: empty JSON path in a condition", r.Kind)
		}
	}
	return nil
}

// Extract returns the event ID the rules find in the request, trying them
// in order, or "" when none matches. body is the raw body. The ID is
// returned normalized (see Normalize), so it can always travel in a header.
func Extract(rules []Rule, r *http.Request, body []byte, now time.Time) string {
	return FindID(fields.Read(r, body), rules, now)
}

// Request is a fields.Request.
//
// Deprecated: a request's fields are not deduplication's; use
// fields.Request.
type Request = fields.Request

// Inspect is fields.Read.
//
// Deprecated: use fields.Read.
func Inspect(r *http.Request, body []byte) *Request { return fields.Read(r, body) }

// FindID is the event ID the rules find in q, trying them in order, or ""
// when none matches; it is normalized (see Normalize): an id is
// normalized here, where it is found, and nowhere else.
func FindID(q *fields.Request, rules []Rule, now time.Time) string {
	for _, rule := range rules {
		if rule.Kind == KindConst { // a fixed text would merge every event
			continue
		}
		if id := rule.find(q, now); id != "" {
			return Normalize(id)
		}
	}
	return ""
}

// find is the value the rule finds in the request ("" when its conditions
// do not hold or it finds nothing).
func (r Rule) find(q *fields.Request, now time.Time) string {
	if !r.applies(q) {
		return ""
	}
	switch r.Kind {
	case KindHeader, KindJSON, KindForm:
		return q.Text(r.Kind, r.Arg)
	case KindBodyHash:
		return bodyHash(q, r.Window, now)
	case KindRawHash:
		return rawHash(q, r.Arg)
	case KindConst:
		return r.Arg
	}
	return ""
}

// applies reports whether the rule's JSON conditions hold.
func (r Rule) applies(q *fields.Request) bool {
	for _, p := range r.IfPresent {
		if !q.Present(p) {
			return false
		}
	}
	for _, p := range r.IfAbsent {
		if q.Present(p) {
			return false
		}
	}
	return true
}

// bodyHash hashes the body (re-encoded canonically when it is JSON, so key
// order and whitespace do not matter) plus the time bucket of now.
func bodyHash(q *fields.Request, window time.Duration, now time.Time) string {
	body := q.Body()
	canon := body
	// json.Valid: the decoded JSON is the first value only, and bodies
	// that merely start alike (NDJSON batches) must not hash alike
	if doc := q.JSON(); doc != nil && json.Valid(body) {
		if b, err := json.Marshal(doc); err == nil { // maps marshal with sorted keys
			canon = b
		}
	}
	h := sha256.New()
	h.Write(canon)
	fmt.Fprintf(h, "|%d", now.UnixNano()/int64(window))
	return "bh:" + hex.EncodeToString(h.Sum(nil)[:16])
}

// rawHash is the SHA-256 of the exact received bytes: no decoding, no
// normalization, no time bucket. An empty body gives "" (nothing tells
// two empty bodies apart).
func rawHash(q *fields.Request, headers string) string {
	body := q.Body()
	if len(body) == 0 {
		return ""
	}
	h := sha256.New()
	if headers != "" {
		for name := range strings.SplitSeq(headers, ",") {
			// length-prefixed, so that no two header values and bodies
			// make the same input
			v := q.HTTP().Header.Get(strings.TrimSpace(name))
			fmt.Fprintf(h, "%d:%s\n", len(v), v)
		}
	}
	h.Write(body)
	return "rh:" + hex.EncodeToString(h.Sum(nil))
}
