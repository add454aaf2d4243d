package verifiers

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// Twilio verifies Twilio webhooks: the X-Twilio-Signature header holds the
// base64 (standard alphabet, padded) HMAC-SHA1, keyed with the account's
// Auth Token, of the full URL Twilio requested followed by the POST
// parameters:
//
//   - for an application/x-www-form-urlencoded body, each parameter's name
//     and value appended with no separator, names sorted, and the values
//     of a repeated name sorted and de-duplicated (as Twilio's SDKs do;
//     empty values count);
//   - when the URL's query carries bodySHA256 (JSON bodies), the URL only,
//     and bodySHA256 must be the lowercase hex SHA-256 of the raw body.
//
// Any other non-empty body is refused as malformed: nothing would
// authenticate it.
//
// The URL is the one Twilio saw. With url set (the public base URL, such
// as https://hooks.example.com, when a proxy or a path rewrite stands in
// between), it is that base followed by the request's path and query as
// received; otherwise it is rebuilt from the request: https when the
// connection is TLS, the Host header, and the request-target as received
// (before any Caddy rewrite). As Twilio's SDKs do, the URL is tried with
// and without its port (the scheme's default port, 443 or 80, when it has
// none), and, as twilio-node does, with ' and %27 spelled either way.
// Several Auth Tokens (primary and secondary) mean rotation: any one may
// match. Twilio signs no timestamp, so there is no replay window.
//
// Mailchimp Transactional (Mandrill) signs its webhooks the same way (the
// URL as entered in Mandrill, then the POST parameters sorted by name, each
// name and value appended; HMAC-SHA1, base64) in X-Mandrill-Signature:
// set header to it.
type Twilio struct {
	// SecretsConfig holds the Auth Tokens (primary and secondary).
	SecretsConfig

	// URL is the public base URL Twilio calls (scheme, host, optional
	// port and path prefix; no query), such as https://hooks.example.com,
	// to which the request's path and query are appended; placeholders
	// are resolved when the module is provisioned. Default: rebuilt from
	// the request.
	URL string `json:"url,omitempty"`

	// Header is the request header carrying the signature. Default:
	// X-Twilio-Signature; Mailchimp Transactional (Mandrill) signs the same
	// way in X-Mandrill-Signature.
	Header string `json:"header,omitempty"`

	keys   [][]byte
	base   *twilioBase
	header string
}

// twilioBase is a parsed url option.
type twilioBase struct {
	scheme   string // "http" or "https"
	userinfo string // "user:pass@" or ""
	host     string // host[:port] as written
	path     string // escaped path prefix, without a trailing slash
}

// The headers Twilio sends with a webhook.
const (
	TwilioSignatureHeader   = "X-Twilio-Signature"
	TwilioIdempotencyHeader = "I-Twilio-Idempotency-Token"
)

// CaddyModule returns the Caddy module information.
func (Twilio) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[Twilio]("webhooks.verifiers.twilio")
}

// Provision resolves the Auth Tokens and parses the base URL.
func (tw *Twilio) Provision(ctx caddy.Context) error {
	tw.base = nil
	if tw.URL != "" {
		u, err := resolveSetting("url", tw.URL)
		if err != nil {
			return err
		}
		if tw.base, err = parseTwilioBase(u); err != nil {
			return err
		}
	}
	tw.header = tw.Header
	if tw.header == "" {
		tw.header = TwilioSignatureHeader
	}
	var err error
	tw.keys, err = tw.resolve()
	return err
}

// parseTwilioBase checks and splits the url option.
func parseTwilioBase(s string) (*twilioBase, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("url: %v", err)
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("url %q must be an absolute http or https URL", s)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, fmt.Errorf("url %q must not have a query or fragment: the request's own are appended", s)
	}
	b := &twilioBase{scheme: scheme, host: u.Host, path: strings.TrimSuffix(u.EscapedPath(), "/")}
	if u.User != nil {
		b.userinfo = u.User.String() + "@"
	}
	return b, nil
}

// Verify checks the request's signature over the URL and the parameters,
// and for JSON bodies the bodySHA256 query parameter.
func (tw *Twilio) Verify(r *http.Request, body []byte, now time.Time) error {
	_, err := tw.VerifyKey(r, body, now)
	return err
}

// VerifyKey is Verify, returning the position among the configured
// secrets of the one that matched (KeyVerifier).
func (tw *Twilio) VerifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	k, err := tw.verifyKey(r, body, now)
	return tw.keyPosition(k), err
}

// verifyKey checks the request, returning the position of the matching
// key among those in effect.
func (tw *Twilio) verifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	sig := r.Header.Get(tw.header)
	if sig == "" {
		return 0, errHeaderMissing(tw.header)
	}
	if !EncodingBase64.WellFormed(sig, sha1.Size) {
		return 0, fmt.Errorf("%w: header %s is not %d bytes of base64", ErrFormat, tw.header, sha1.Size)
	}

	uri, err := twilioRequestURI(r)
	if err != nil {
		return 0, err
	}
	var scheme, userinfo, host, prefix string
	if tw.base != nil {
		scheme, userinfo, host, prefix = tw.base.scheme, tw.base.userinfo, tw.base.host, tw.base.path
	} else {
		scheme, host = "http", r.Host
		if r.TLS != nil {
			scheme = "https"
		}
		if host == "" {
			host = r.URL.Host
		}
		if host == "" {
			return 0, fmt.Errorf("%w: no Host to rebuild the signed URL from (set url)", ErrFormat)
		}
	}

	// what follows the URL in the signed text
	var params []byte
	bodyHash, hasBodyHash := twilioBodySHA256(uri)
	switch {
	case hasBodyHash:
		if !EncodingHex.WellFormed(bodyHash, sha256.Size) {
			return 0, fmt.Errorf("%w: query parameter bodySHA256 is not a hex SHA-256", ErrFormat)
		}
	case isFormContentType(r.Header.Get("Content-Type")):
		if params, err = twilioParams(body); err != nil {
			return 0, err
		}
	case len(body) > 0:
		return 0, fmt.Errorf("%w: the body is not form-encoded and the URL carries no bodySHA256", ErrFormat)
	}

	hostname, port := splitTwilioHostPort(host)
	if port == "" {
		port = "443"
		if scheme == "http" {
			port = "80"
		}
	}
	head := scheme + "://" + userinfo
	tail := prefix + uri
	urls := []string{head + hostname + tail, head + hostname + ":" + port + tail}
	for _, u := range urls[:2] {
		if strings.Contains(u, "'") {
			urls = append(urls, strings.ReplaceAll(u, "'", "%27"))
		}
		if strings.Contains(u, "%27") {
			urls = append(urls, strings.ReplaceAll(u, "%27", "'"))
		}
	}
	matched, key := false, 0
	for _, u := range urls {
		if k, err := MatchHMAC(sha1.New, tw.keys, EncodingBase64, []string{sig}, []byte(u), params); err == nil {
			matched, key = true, k
			break
		}
	}
	if !matched {
		return 0, fmt.Errorf("%w: no configured Auth Token produces the signature for this URL and body", ErrMismatch)
	}
	if hasBodyHash {
		sum := sha256.Sum256(body)
		if !EqualSignature(bodyHash, hex.EncodeToString(sum[:])) {
			return 0, &reasonError{base: ErrMismatch, mark: errBodyChanged, msg: "the body does not match the URL's bodySHA256"}
		}
	}
	return key, nil
}

// twilioRequestURI returns the request-target as the client sent it (path
// and query, still escaped): the one Caddy received before any rewrite
// when available.
func twilioRequestURI(r *http.Request) (string, error) {
	uri := r.RequestURI
	if orig, ok := r.Context().Value(caddyhttp.OriginalRequestCtxKey).(http.Request); ok && orig.RequestURI != "" {
		uri = orig.RequestURI
	}
	if uri == "" {
		uri = r.URL.RequestURI()
	}
	if strings.HasPrefix(uri, "/") {
		return uri, nil
	}
	// absolute-form request-target (http://host/path?query)
	u, err := url.Parse(uri)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%w: cannot read the request-target to rebuild the signed URL", ErrFormat)
	}
	return u.RequestURI(), nil
}

// twilioBodySHA256 returns the first bodySHA256 value of the query of uri.
func twilioBodySHA256(uri string) (string, bool) {
	_, query, ok := strings.Cut(uri, "?")
	if !ok || !strings.Contains(query, "bodySHA256") {
		return "", false
	}
	q, _ := url.ParseQuery(query) // keeps what parses; the URL is signed anyway
	if v, ok := q["bodySHA256"]; ok && len(v) > 0 {
		return v[0], true
	}
	return "", false
}

// isFormContentType reports whether a Content-Type header value is
// application/x-www-form-urlencoded (parameters such as charset allowed).
func isFormContentType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/x-www-form-urlencoded")
}

// twilioParams returns the signed text of a form body: for each name in
// sorted order, for each of its distinct values in sorted order, name and
// value concatenated.
func twilioParams(body []byte) ([]byte, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fmt.Errorf("%w: the form body cannot be parsed", ErrFormat)
	}
	names := make([]string, 0, len(form))
	size := 0
	for name, vals := range form {
		names = append(names, name)
		for _, v := range vals {
			size += len(name) + len(v)
		}
	}
	slices.Sort(names)
	out := make([]byte, 0, size)
	for _, name := range names {
		vals := form[name]
		slices.Sort(vals)
		vals = slices.Compact(vals)
		for _, v := range vals {
			out = append(out, name...)
			out = append(out, v...)
		}
	}
	return out, nil
}

// splitTwilioHostPort splits host[:port], including [ipv6]:port, without
// judging either part.
func splitTwilioHostPort(hostport string) (host, port string) {
	i := strings.LastIndexByte(hostport, ':')
	if i < 0 || strings.LastIndexByte(hostport, ']') > i {
		return hostport, ""
	}
	return hostport[:i], hostport[i+1:]
}

// otherProvider reports whether the scheme reads Twilio's format under
// another header (Mandrill's): another provider's, whose account and retry
// horizon are not Twilio's.
func (tw *Twilio) otherProvider() bool {
	return tw.Header != "" && !strings.EqualFold(tw.Header, TwilioSignatureHeader)
}

// DefaultIDFrom returns the I-Twilio-Idempotency-Token header (one per
// webhook, the same on Twilio's retries), otherwise a hash of the exact
// received bytes. MessageSid is not a default: the status callbacks of one
// message (queued, sent, delivered, read...) all carry its MessageSid.
func (*Twilio) DefaultIDFrom() []IDRule {
	return []IDRule{idHeader(TwilioIdempotencyHeader), idRawHash()}
}

// UnmarshalCaddyfile sets up the scheme from the Caddyfile tokens after
// `verify`. Syntax:
//
//	twilio [<auth_token>...] {
//		secret <auth_token>...
//		url    <public base url>
//		header <name>
//	}
//
// url and header may appear once each.
func (tw *Twilio) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseSecretsBlock(d, &tw.Secrets, func(d *caddyfile.Dispenser, name string) (bool, error) {
		switch name {
		case "url":
			return true, oneArgOnce(d, &tw.URL)
		case "header":
			return true, oneArgOnce(d, &tw.Header)
		}
		return false, nil
	})
}

// Interface guards
var _ scheme = (*Twilio)(nil)
