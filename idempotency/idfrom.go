package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Rule is one id_from rule: where to find a webhook's event ID.
//
//	header <name>
//	json <dot.path>        # array indices allowed: entry.0.id
//	form <field>
//	body_hash <window>     # hash of the normalized JSON (or raw body) + time bucket
type Rule struct {
	Kind   string        `json:"kind"`
	Arg    string        `json:"arg,omitempty"`
	Window time.Duration `json:"window,omitempty"` // body_hash only
}

// ParseRule builds a rule from its Caddyfile words.
func ParseRule(kind, arg string) (Rule, error) {
	r := Rule{Kind: kind, Arg: arg}
	switch kind {
	case "header", "json", "form":
		if arg == "" {
			return r, fmt.Errorf("id_from %s needs an argument", kind)
		}
	case "body_hash":
		if arg == "" {
			return r, fmt.Errorf("id_from body_hash needs a window, such as 5m")
		}
		d, err := time.ParseDuration(arg)
		if err != nil || d <= 0 {
			return r, fmt.Errorf("id_from body_hash: invalid window %q", arg)
		}
		r.Window, r.Arg = d, ""
	default:
		return r, fmt.Errorf("unknown id_from kind %q (want header, json, form or body_hash)", kind)
	}
	return r, nil
}

// maxIDLen bounds an extracted ID; longer values are hashed.
const maxIDLen = 200

// Extract returns the event ID the rules find in the request, trying them
// in order, or "" when none matches. body is the raw body.
func Extract(rules []Rule, r *http.Request, body []byte, now time.Time) string {
	var doc any
	parsed := false
	for _, rule := range rules {
		var id string
		switch rule.Kind {
		case "header":
			id = strings.TrimSpace(r.Header.Get(rule.Arg))
		case "json":
			if !parsed {
				parsed = true
				doc = decodeJSON(body)
			}
			id = jsonPath(doc, rule.Arg)
		case "form":
			id = formValue(r, body, rule.Arg)
		case "body_hash":
			id = bodyHash(body, rule.Window, now)
		}
		if id != "" {
			if len(id) > maxIDLen {
				sum := sha256.Sum256([]byte(id))
				id = "sha256:" + hex.EncodeToString(sum[:])
			}
			return id
		}
	}
	return ""
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

// jsonPath walks a dot path; numeric segments index arrays. Strings and
// numbers are returned as text; anything else gives "".
func jsonPath(doc any, path string) string {
	cur := doc
	for _, seg := range strings.Split(path, ".") {
		switch v := cur.(type) {
		case map[string]any:
			cur = v[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(v) {
				return ""
			}
			cur = v[i]
		default:
			return ""
		}
	}
	switch v := cur.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	}
	return ""
}

func formValue(r *http.Request, body []byte, field string) string {
	ct := r.Header.Get("Content-Type")
	if !strings.HasPrefix(strings.ToLower(ct), "application/x-www-form-urlencoded") {
		return ""
	}
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		return ""
	}
	return vals.Get(field)
}

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
