package verifiers

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// HMAC verifies a generic HMAC signature, for providers without a scheme of
// their own. The signature header holds exactly one signature: the
// configured prefix followed by the MAC in the configured encoding. Hex
// must be lowercase and base64 must be the standard, padded alphabet; the
// MAC is compared as text in constant time. Several secrets mean rotation:
// any one may match.
//
// The signed bytes are signed_content with {body} replaced by the raw
// body, {timestamp} by the timestamp header's value as received and {id}
// by the id header's value. With timestamp_header set, the timestamp must
// be integer Unix seconds within tolerance of the current time, in either
// direction.
//
// For example, a provider sending `X-Signature: sha256=<hex>` over
// "<timestamp>.<body>" with the time in `X-Timestamp`:
//
//	verify hmac {env.HOOK_SECRET} {
//		prefix sha256=
//		timestamp_header X-Timestamp
//	}
type HMAC struct {
	// SecretsConfig holds the shared secrets.
	SecretsConfig

	// Header is the request header carrying the signature. Default:
	// X-Signature.
	Header string `json:"header,omitempty"`

	// Algorithm is the hash: sha1, sha256 or sha512. Default: sha256.
	Algorithm string `json:"algorithm,omitempty"`

	// Encoding is how the MAC is written: hex (lowercase) or base64
	// (standard alphabet, padded). Default: hex.
	Encoding string `json:"encoding,omitempty"`

	// Prefix is the text that comes before the MAC in the header, such as
	// "sha256="; a header without it is refused as malformed. Default:
	// none.
	Prefix string `json:"prefix,omitempty"`

	// TimestampHeader is the request header carrying the signed timestamp
	// (integer Unix seconds); when it is set, the timestamp is required
	// and must be within tolerance, and signed_content must include
	// {timestamp}.
	TimestampHeader string `json:"timestamp_header,omitempty"`

	// IDHeader is the request header whose value fills {id} in
	// signed_content, and the default id_from rule of this scheme.
	// Default: Idempotency-Key.
	IDHeader string `json:"id_header,omitempty"`

	// SignedContent is the template of the signed bytes, over {id},
	// {timestamp} and {body}, which it must include. Default: "{body}", or
	// "{timestamp}.{body}" when timestamp_header is set.
	SignedContent string `json:"signed_content,omitempty"`

	// ToleranceConfig holds the replay window, only taken with
	// timestamp_header (default 5m).
	ToleranceConfig

	keys      [][]byte
	newHash   func() hash.Hash
	size      int
	enc       Encoding
	tmpl      []templatePart
	usesID    bool
	tolerance time.Duration
}

// DefaultHMACHeader is the signature header of the generic scheme when
// none is configured.
const DefaultHMACHeader = "X-Signature"

// CaddyModule returns the Caddy module information.
func (HMAC) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[HMAC]("webhooks.verifiers.hmac")
}

// Provision resolves the secrets, fills in defaults and checks the
// configuration.
func (h *HMAC) Provision(ctx caddy.Context) error {
	if h.Header == "" {
		h.Header = DefaultHMACHeader
	}
	if h.Algorithm == "" {
		h.Algorithm = "sha256"
	}
	if h.Encoding == "" {
		h.Encoding = string(EncodingHex)
	}
	if h.IDHeader == "" {
		h.IDHeader = DefaultIDHeader
	}
	if h.SignedContent == "" {
		h.SignedContent = "{body}"
		if h.TimestampHeader != "" {
			h.SignedContent = "{timestamp}.{body}"
		}
	}

	var err error
	if h.newHash, err = hashByName(h.Algorithm); err != nil {
		return err
	}
	h.size = h.newHash().Size()
	h.enc = Encoding(h.Encoding)
	if !h.enc.Valid() {
		return fmt.Errorf("unknown encoding %q (want hex or base64)", h.Encoding)
	}
	def := DefaultTolerance
	if h.TimestampHeader == "" {
		def = 0
	}
	if h.tolerance, err = h.ToleranceConfig.compile(def); err != nil {
		return err
	}
	if h.TimestampHeader == "" && h.tolerance != 0 {
		return errors.New("tolerance needs timestamp_header")
	}

	var uses map[string]bool
	if h.tmpl, uses, err = parseTemplate(h.SignedContent); err != nil {
		return err
	}
	if !uses["body"] {
		return errors.New("signed_content must include {body}")
	}
	if uses["timestamp"] && h.TimestampHeader == "" {
		return errors.New("signed_content uses {timestamp} but timestamp_header is not set")
	}
	if !uses["timestamp"] && h.TimestampHeader != "" {
		// a timestamp that is not signed proves nothing about replay
		return errors.New("timestamp_header is set but signed_content does not include {timestamp}")
	}
	h.usesID = uses["id"]

	h.keys, err = h.resolve()
	return err
}

// Verify checks the request's signature and, if configured, its timestamp.
func (h *HMAC) Verify(r *http.Request, body []byte, now time.Time) error {
	_, err := h.VerifyKey(r, body, now)
	return err
}

// KeyCount is how many secrets are in effect (KeyVerifier).
func (h *HMAC) KeyCount() int { return len(h.keys) }

// VerifyKey is Verify, returning the position of the secret that matched
// (KeyVerifier).
func (h *HMAC) VerifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	raw := r.Header.Get(h.Header)
	if raw == "" {
		return 0, errHeaderMissing(h.Header)
	}
	sig, ok := strings.CutPrefix(raw, h.Prefix)
	if !ok {
		return 0, fmt.Errorf("%w: header %s lacks the expected prefix", ErrFormat, h.Header)
	}
	if !h.enc.WellFormed(sig, h.size) {
		return 0, fmt.Errorf("%w: header %s is not %d bytes of %s", ErrFormat, h.Header, h.size, h.enc)
	}

	var ts, id string
	if h.TimestampHeader != "" {
		var t int64
		var err error
		if ts, t, err = timestampHeader(r, h.TimestampHeader); err != nil {
			return 0, err
		}
		if err = CheckTimestamp(t, now, h.tolerance); err != nil {
			return 0, err
		}
	}
	if h.usesID {
		id = r.Header.Get(h.IDHeader)
		if id == "" {
			return 0, errHeaderMissing(h.IDHeader)
		}
	}

	msg := make([][]byte, len(h.tmpl))
	for i, p := range h.tmpl {
		switch p.field {
		case fieldBody:
			msg[i] = body
		case fieldTimestamp:
			msg[i] = []byte(ts)
		case fieldID:
			msg[i] = []byte(id)
		default:
			msg[i] = p.lit
		}
	}
	return MatchHMAC(h.newHash, h.keys, h.enc, []string{sig}, msg...)
}

// DefaultIDFrom returns the id header: id_header when set, otherwise
// Idempotency-Key.
func (h *HMAC) DefaultIDFrom() []IDRule {
	if h.IDHeader != "" {
		return []IDRule{idHeader(h.IDHeader)}
	}
	return []IDRule{idHeader(DefaultIDHeader)}
}

// UnmarshalCaddyfile sets up the scheme from the Caddyfile tokens after
// `verify`. Syntax:
//
//	hmac [<secret>...] {
//		secret           <secret>...
//		header           <name>
//		algorithm        sha1|sha256|sha512
//		encoding         hex|base64
//		prefix           <text>
//		timestamp_header <name>
//		id_header        <name>
//		signed_content   <template>
//		tolerance        <duration>
//	}
//
// Every option but secret takes exactly one argument; see the fields of
// HMAC for what each means and its default.
func (h *HMAC) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseSecretsBlock(d, &h.Secrets, h.caddyfileOption)
}

// caddyfileOption parses the options of the hmac block other than secret.
func (h *HMAC) caddyfileOption(d *caddyfile.Dispenser, name string) (bool, error) {
	switch name {
	case "header":
		return true, oneArg(d, &h.Header)
	case "algorithm":
		if err := oneArg(d, &h.Algorithm); err != nil {
			return true, err
		}
		if _, err := hashByName(h.Algorithm); err != nil {
			return true, d.Err(err.Error())
		}
	case "encoding":
		if err := oneArg(d, &h.Encoding); err != nil {
			return true, err
		}
		if !Encoding(h.Encoding).Valid() {
			return true, d.Errf("unknown encoding %q (want hex or base64)", h.Encoding)
		}
	case "prefix":
		return true, oneArg(d, &h.Prefix)
	case "timestamp_header":
		return true, oneArg(d, &h.TimestampHeader)
	case "id_header":
		return true, oneArg(d, &h.IDHeader)
	case "signed_content":
		if err := oneArg(d, &h.SignedContent); err != nil {
			return true, err
		}
		if _, _, err := parseTemplate(h.SignedContent); err != nil {
			return true, d.Err(err.Error())
		}
	case "tolerance":
		return true, h.ToleranceConfig.parse(d)
	default:
		return false, nil
	}
	return true, nil
}

// hashByName returns the hash named by the algorithm option.
func hashByName(name string) (func() hash.Hash, error) {
	switch name {
	case "sha1":
		return sha1.New, nil
	case "sha256":
		return sha256.New, nil
	case "sha512":
		return sha512.New, nil
	}
	return nil, fmt.Errorf("unknown algorithm %q (want sha1, sha256 or sha512)", name)
}

// The fields a signed_content template may use.
const (
	fieldLiteral = iota
	fieldBody
	fieldTimestamp
	fieldID
)

// templatePart is a literal or a field of a signed_content template.
type templatePart struct {
	field int
	lit   []byte
}

// parseTemplate splits a signed_content template into literals and fields,
// and reports which fields it uses. An unknown or unclosed {placeholder}
// is an error; a lone "}" is literal text.
func parseTemplate(tpl string) ([]templatePart, map[string]bool, error) {
	var parts []templatePart
	uses := map[string]bool{}
	rest := tpl
	for rest != "" {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			parts = append(parts, templatePart{lit: []byte(rest)})
			break
		}
		if i > 0 {
			parts = append(parts, templatePart{lit: []byte(rest[:i])})
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return nil, nil, fmt.Errorf("signed_content %q: unclosed {", tpl)
		}
		name := rest[i+1 : i+j]
		var f int
		switch name {
		case "body":
			f = fieldBody
		case "timestamp":
			f = fieldTimestamp
		case "id":
			f = fieldID
		default:
			return nil, nil, fmt.Errorf("signed_content %q: unknown placeholder {%s} (want {id}, {timestamp} or {body})", tpl, name)
		}
		uses[name] = true
		parts = append(parts, templatePart{field: f})
		rest = rest[i+j+1:]
	}
	return parts, uses, nil
}

// Interface guards
var _ scheme = (*HMAC)(nil)
