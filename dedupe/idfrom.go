package dedupe

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The kinds of id_from rules.
const (
	KindHeader   = "header"    // a request header
	KindJSON     = "json"      // a dot path into the JSON body
	KindForm     = "form"      // a field of a url-encoded form body
	KindBodyHash = "body_hash" // hash of the normalized body plus a time bucket
	KindRawHash  = "raw_hash"  // hash of the exact received bytes, no window
	// KindConst is a fixed text, for type_from's joined parts only (the
	// "messaging" of Meta's "page.messaging"); it is never an id.
	KindConst = "const"
)

// IsFieldKind reports whether kind names one field of a request (header,
// json or form): the kinds that routing conditions and order keys read.
func IsFieldKind(kind string) bool {
	return kind == KindHeader || kind == KindJSON || kind == KindForm
}

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
	return Inspect(r, body).ID(rules, now)
}

// A Request is one webhook request as id_from and type_from rules read it:
// its JSON body is decoded at most once, on first use, however many rules
// of either kind look into it.
type Request struct {
	r      *http.Request
	body   []byte
	doc    any
	parsed bool
}

// Inspect returns the request r with its raw body, for ID and Type.
func Inspect(r *http.Request, body []byte) *Request { return &Request{r: r, body: body} }

// json is the decoded body (nil when it is not JSON).
func (q *Request) json() any {
	if !q.parsed {
		q.parsed = true
		q.doc = decodeJSON(q.body)
	}
	return q.doc
}

// JSON is the decoded JSON body (json.Number for numbers; nil when the
// body is not JSON, or is JSON null), decoded once for every reader.
func (q *Request) JSON() any { return q.json() }

// ID is the event ID the rules find, trying them in order, or "" when
// none matches; it is normalized (see Normalize).
func (q *Request) ID(rules []Rule, now time.Time) string {
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
func (r Rule) find(q *Request, now time.Time) string {
	if !r.applies(q.json) {
		return ""
	}
	switch r.Kind {
	case KindHeader:
		return strings.TrimSpace(q.r.Header.Get(r.Arg))
	case KindJSON:
		return jsonPath(q.json(), r.Arg)
	case KindForm:
		return formValue(q.r, q.body, r.Arg)
	case KindBodyHash:
		return bodyHash(q.body, r.Window, now)
	case KindRawHash:
		return rawHash(q.r, r.Arg, q.body)
	case KindConst:
		return r.Arg
	}
	return ""
}

// applies reports whether the rule's JSON conditions hold; doc decodes the
// body on first use.
func (r Rule) applies(doc func() any) bool {
	for _, p := range r.IfPresent {
		if !jsonPresent(doc(), p) {
			return false
		}
	}
	for _, p := range r.IfAbsent {
		if jsonPresent(doc(), p) {
			return false
		}
	}
	return true
}

func decodeJSON(body []byte) any {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	return v
}

// jsonLookup walks a dot path; numeric segments index arrays. found is
// false when a key is missing, an index is out of range or a segment walks
// into something that is neither an object nor an array.
func jsonLookup(doc any, path string) (v any, found bool) {
	cur := doc
	for _, seg := range strings.Split(path, ".") {
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[seg]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(v) {
				return nil, false
			}
			cur = v[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// jsonPresent reports whether path holds a value other than null.
func jsonPresent(doc any, path string) bool {
	v, found := jsonLookup(doc, path)
	return found && v != nil
}

// jsonPath returns the string or number at path as text; anything else
// gives "".
func jsonPath(doc any, path string) string {
	v, _ := jsonLookup(doc, path)
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	}
	return ""
}

// Field is the text of one field of the request, for routing
// conditions: kind header (the first value of the header), json (the
// scalar at the dot path: a string as itself, a number as written, true,
// false and null as those words; an object or an array is not a field) or
// form (a field of a url-encoded form body). ok is false when the request
// has no such field.
func (q *Request) Field(kind, path string) (v string, ok bool) {
	switch kind {
	case KindHeader:
		vals := q.r.Header.Values(path)
		if len(vals) == 0 {
			return "", false
		}
		return vals[0], true
	case KindJSON:
		x, found := jsonLookup(q.json(), path)
		if !found {
			return "", false
		}
		switch x := x.(type) {
		case string:
			return x, true
		case json.Number:
			return x.String(), true
		case bool:
			return strconv.FormatBool(x), true
		case nil:
			return "null", true
		}
	case KindForm:
		if vals, err := formValues(q.r, q.body); err == nil && vals.Has(path) {
			return vals.Get(path), true
		}
	}
	return "", false
}

func formValue(r *http.Request, body []byte, field string) string {
	vals, err := formValues(r, body)
	if err != nil {
		return ""
	}
	return vals.Get(field)
}

// formValues parses a url-encoded form body (an error for any other
// content type).
func formValues(r *http.Request, body []byte) (url.Values, error) {
	ct := r.Header.Get("Content-Type")
	if !strings.HasPrefix(strings.ToLower(ct), "application/x-www-form-urlencoded") {
		return nil, errNotForm
	}
	return url.ParseQuery(string(body))
}

var errNotForm = errors.New("not a url-encoded form")

// bodyHash hashes the body (re-encoded canonically when it is JSON, so key
// order and whitespace do not matter) plus the time bucket of now.
func bodyHash(body []byte, window time.Duration, now time.Time) string {
	canon := body
	// json.Valid: decodeJSON reads only the first value, and bodies that
	// merely start alike (NDJSON batches) must not hash alike
	if doc := decodeJSON(body); doc != nil && json.Valid(body) {
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
func rawHash(r *http.Request, headers string, body []byte) string {
	if len(body) == 0 {
		return ""
	}
	h := sha256.New()
	if headers != "" {
		for name := range strings.SplitSeq(headers, ",") {
			// length-prefixed, so that no two header values and bodies
			// make the same input
			v := r.Header.Get(strings.TrimSpace(name))
			fmt.Fprintf(h, "%d:%s\n", len(v), v)
		}
	}
	h.Write(body)
	return "rh:" + hex.EncodeToString(h.Sum(nil))
}
