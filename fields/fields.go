// Package fields reads one webhook request's fields as hookline's rules
// name them: a header, a dot path into the JSON body, a field of a
// url-encoded form body. The id_from and type_from rules (package dedupe),
// the destinations' conditions (package routing), the schema check and the
// order keys all read a request through one Request, which decodes the
// JSON body at most once however many of them look into it.
package fields

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The kinds of field.
const (
	Header = "header" // a request header
	JSON   = "json"   // a dot path into the JSON body
	Form   = "form"   // a field of a url-encoded form body
)

// IsKind reports whether kind names a kind of field (header, json, form).
func IsKind(kind string) bool { return kind == Header || kind == JSON || kind == Form }

// A Request is one webhook request with its raw body, as the rules read
// it: its JSON body is decoded at most once, on first use.
type Request struct {
	r      *http.Request
	body   []byte
	doc    any
	parsed bool
	form   url.Values
	formOK bool // form parsed (form nil: not a url-encoded form)
}

// Read returns the request r with its raw body (r's own Body is not read).
func Read(r *http.Request, body []byte) *Request { return &Request{r: r, body: body} }

// HTTP is the request itself (its headers).
func (q *Request) HTTP() *http.Request { return q.r }

// Body is the raw body, as received.
func (q *Request) Body() []byte { return q.body }

// JSON is the decoded JSON body (json.Number for numbers; nil when the
// body is not JSON, or is JSON null), decoded once for every reader.
func (q *Request) JSON() any {
	if !q.parsed {
		q.parsed = true
		q.doc = decode(q.body)
	}
	return q.doc
}

// Text is the text the id_from and type_from rules find in a field: a
// header's first value without surrounding space, the string or number
// at a JSON path (anything else: ""), a form field's value; "" when the
// request has no such field.
func (q *Request) Text(kind, path string) string {
	switch kind {
	case Header:
		return strings.TrimSpace(q.r.Header.Get(path))
	case JSON:
		v, _ := lookup(q.JSON(), path)
		switch v := v.(type) {
		case string:
			return v
		case json.Number:
			return v.String()
		}
	case Form:
		if vals := q.formValues(); vals != nil {
			return vals.Get(path)
		}
	}
	return ""
}

// Present reports whether the JSON body holds a value other than null at
// path.
func (q *Request) Present(path string) bool {
	v, found := lookup(q.JSON(), path)
	return found && v != nil
}

// Field is the text of one field of the request, for routing
// conditions: kind header (the first value of the header), json (the
// scalar at the dot path: a string as itself, a number as written, true,
// false and null as those words; an object or an array is not a field) or
// form (a field of a url-encoded form body). ok is false when the request
// has no such field.
func (q *Request) Field(kind, path string) (v string, ok bool) {
	switch kind {
	case Header:
		vals := q.r.Header.Values(path)
		if len(vals) == 0 {
			return "", false
		}
		return vals[0], true
	case JSON:
		x, found := lookup(q.JSON(), path)
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
	case Form:
		if vals := q.formValues(); vals.Has(path) {
			return vals.Get(path), true
		}
	}
	return "", false
}

// formValues is the url-encoded form body, parsed once (nil for any other
// content type, or a body that does not parse).
func (q *Request) formValues() url.Values {
	if !q.formOK {
		q.formOK = true
		ct := q.r.Header.Get("Content-Type")
		if strings.HasPrefix(strings.ToLower(ct), "application/x-www-form-urlencoded") {
			if vals, err := url.ParseQuery(string(q.body)); err == nil {
				q.form = vals
			}
		}
	}
	return q.form
}

// decode decodes the first JSON value of body, numbers as json.Number
// (nil when body does not start with one).
func decode(body []byte) any {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	return v
}

// lookup walks a dot path; numeric segments index arrays. found is false
// when a key is missing, an index is out of range or a segment walks into
// something that is neither an object nor an array.
func lookup(doc any, path string) (v any, found bool) {
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
