package verifiers

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
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
// configured prefix followed by the MAC in the configured encoding; or,
// with signature_param, a list of key=value parameters (separated by commas
// or spaces) whose signature_param values are signatures, any of which may
// match, and whose timestamp_param value is the signed timestamp. Hex
// must be lowercase and base64 must be the standard, padded alphabet; the
// MAC is compared as text in constant time. Several secrets mean rotation:
// any one may match.
//
// The signed bytes are signed_content with {body} replaced by the raw
// body, {timestamp} by the timestamp (timestamp_header's or
// timestamp_param's value) as received and {id} by the id header's value.
// With a timestamp, it must be within tolerance of the current time, in
// either direction, read as timestamp_format says: integer Unix seconds,
// milliseconds, or RFC 3339.
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

	// Algorithm is the hash: md5, sha1, sha256 or sha512. Default:
	// sha256. (HMAC-MD5 is still a sound MAC; md5 is there for the
	// providers that sign with it.)
	Algorithm string `json:"algorithm,omitempty"`

	// Encoding is how the MAC is written: hex (lowercase) or base64
	// (standard alphabet, padded). Default: hex.
	Encoding string `json:"encoding,omitempty"`

	// Prefix is the text that comes before the MAC in the header, such as
	// "sha256="; a header without it is refused as malformed. Default:
	// none.
	Prefix string `json:"prefix,omitempty"`

	// SignatureParam, when set, makes the header a list of key=value
	// parameters, separated by commas or spaces (`t=1700000000,v1=<mac>`):
	// the values of this key are the signatures, any of which may match.
	// Prefix is then not used.
	SignatureParam string `json:"signature_param,omitempty"`

	// TimestampParam is the key of the signed timestamp in the header's
	// parameters (with signature_param; instead of timestamp_header).
	// Every occurrence of it must hold the same value.
	TimestampParam string `json:"timestamp_param,omitempty"`

	// TimestampHeader is the request header carrying the signed timestamp;
	// when it is set, the timestamp is required and must be within
	// tolerance, and signed_content must include {timestamp}.
	TimestampHeader string `json:"timestamp_header,omitempty"`

	// TimestampFormat is how the timestamp is written: unix (integer
	// seconds), unix_ms (integer milliseconds) or rfc3339 (such as
	// 2021-02-19T23:47:00.8091512Z, any offset). Default: unix.
	TimestampFormat string `json:"timestamp_format,omitempty"`

	// SecretEncoding is how the configured secrets are written: raw (the
	// key is the text itself), base64 (standard alphabet, padded or not)
	// or hex. Default: raw.
	SecretEncoding string `json:"secret_encoding,omitempty"`

	// IDHeader is the request header whose value fills {id} in
	// signed_content, and the default id_from rule of this scheme.
	// Default: Idempotency-Key.
	IDHeader string `json:"id_header,omitempty"`

	// SignedContent is the template of the signed bytes, over {id},
	// {timestamp} and {body}, which it must include. Default: "{body}", or
	// "{timestamp}.{body}" with a timestamp.
	SignedContent string `json:"signed_content,omitempty"`

	// ToleranceConfig holds the replay window, only taken with
	// timestamp_header (default 5m).
	ToleranceConfig

	keys [][]byte
	signed
	newHash func() hash.Hash
	size    int
	enc     Encoding
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
	switch {
	case h.TimestampParam != "" && h.SignatureParam == "":
		return errors.New("timestamp_param needs signature_param")
	case h.TimestampParam != "" && h.TimestampHeader != "":
		return errors.New("timestamp_param and timestamp_header both name the timestamp: keep one")
	case h.SignatureParam != "" && h.Prefix != "":
		return errors.New("prefix is not used with signature_param: the parameter's key says which value is a signature")
	case h.SignatureParam != "" && h.SignatureParam == h.TimestampParam:
		return errors.New("signature_param and timestamp_param must name different keys")
	}
	timestamped := h.TimestampHeader != "" || h.TimestampParam != ""
	if h.SignedContent == "" {
		h.SignedContent = "{body}"
		if timestamped {
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
	if h.signed, err = compileSigned(h.SignedContent, h.TimestampFormat, &h.ToleranceConfig, timestamped, "timestamp_header or timestamp_param"); err != nil {
		return err
	}

	if h.keys, err = h.resolve(); err != nil {
		return err
	}
	return decodeSecrets(h.keys, h.SecretEncoding, h.secretNumber)
}

// Verify checks the request's signature and, if configured, its timestamp.
func (h *HMAC) Verify(r *http.Request, body []byte, now time.Time) error {
	_, err := h.VerifyKey(r, body, now)
	return err
}

// VerifyKey is Verify, returning the position among the configured
// secrets of the one that matched (KeyVerifier).
func (h *HMAC) VerifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	k, err := h.verifyKey(r, body, now)
	return h.keyPosition(k), err
}

// verifyKey checks the request, returning the position of the matching
// key among those in effect.
func (h *HMAC) verifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	raw := r.Header.Get(h.Header)
	if raw == "" {
		return 0, errHeaderMissing(h.Header)
	}
	var ts, id string
	var sigs []string
	if h.SignatureParam != "" {
		var err error
		if ts, sigs, err = h.headerParams(raw); err != nil {
			return 0, err
		}
	} else {
		sig, ok := strings.CutPrefix(raw, h.Prefix)
		if !ok {
			return 0, fmt.Errorf("%w: header %s lacks the expected prefix", ErrFormat, h.Header)
		}
		sigs = []string{sig}
	}
	if !anyWellFormed(h.enc, sigs, h.size) {
		return 0, fmt.Errorf("%w: header %s is not %d bytes of %s", ErrFormat, h.Header, h.size, h.enc)
	}

	if h.TimestampHeader != "" {
		if ts = r.Header.Get(h.TimestampHeader); ts == "" {
			return 0, errHeaderMissing(h.TimestampHeader)
		}
	}
	if h.TimestampHeader != "" || h.TimestampParam != "" {
		t, err := h.parseTime(ts)
		if err != nil {
			if h.TimestampHeader != "" {
				return 0, fmt.Errorf("header %s: %w", h.TimestampHeader, err)
			}
			return 0, fmt.Errorf("header %s, parameter %s: %w", h.Header, h.TimestampParam, err)
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
	return MatchHMAC(h.newHash, h.keys, h.enc, sigs, msg...)
}

// headerParams reads the signature header as key=value parameters: the
// signatures (the values of signature_param) and the timestamp (the value
// of timestamp_param, the same in each occurrence). A parameter without
// "=", no signature, or a missing or ambiguous timestamp is malformed
// (ErrFormat); parameters of other keys are ignored.
func (h *HMAC) headerParams(raw string) (ts string, sigs []string, err error) {
	for _, p := range strings.FieldsFunc(raw, func(c rune) bool { return c == ',' || c == ' ' || c == '\t' }) {
		k, v, ok := strings.Cut(p, "=")
		if !ok || v == "" {
			return "", nil, fmt.Errorf("%w: header %s has a parameter that is not key=value", ErrFormat, h.Header)
		}
		switch {
		case k == h.SignatureParam:
			sigs = append(sigs, v)
		case h.TimestampParam != "" && k == h.TimestampParam:
			if ts != "" && ts != v {
				return "", nil, fmt.Errorf("%w: header %s has two different %s", ErrFormat, h.Header, h.TimestampParam)
			}
			ts = v
		}
	}
	if len(sigs) == 0 {
		return "", nil, fmt.Errorf("%w: header %s has no %s", ErrFormat, h.Header, h.SignatureParam)
	}
	if h.TimestampParam != "" && ts == "" {
		return "", nil, fmt.Errorf("%w: header %s has no %s", ErrFormat, h.Header, h.TimestampParam)
	}
	return ts, sigs, nil
}

// timestampFormat returns the reader of timestamps written as name says
// (unix when empty), giving Unix seconds (milliseconds and fractions of a
// second truncated); what it cannot read is an error wrapping ErrFormat.
func timestampFormat(name string) (func(string) (int64, error), error) {
	switch name {
	case "", "unix":
		return ParseUnixSeconds, nil
	case "unix_ms":
		return func(s string) (int64, error) {
			ms, err := ParseUnixSeconds(s)
			if err != nil {
				return 0, fmt.Errorf("%w: timestamp is not integer Unix milliseconds", ErrFormat)
			}
			return ms / 1000, nil
		}, nil
	case "rfc3339":
		return func(s string) (int64, error) {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return 0, fmt.Errorf("%w: timestamp is not RFC 3339", ErrFormat)
			}
			return t.Unix(), nil
		}, nil
	}
	return nil, fmt.Errorf("unknown timestamp_format %q (want unix, unix_ms or rfc3339)", name)
}

// decodeSecrets decodes each resolved secret in place as enc says (raw,
// the default, leaves them as they are). An error names a secret by its
// number among the configured ones, never its value.
func decodeSecrets(keys [][]byte, enc string, number func(int) int) error {
	var decode func(string) ([]byte, error)
	switch enc {
	case "", "raw":
		return nil
	case "base64":
		decode = func(s string) ([]byte, error) {
			return base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
		}
	case "hex":
		decode = hex.DecodeString
	default:
		return fmt.Errorf("unknown secret_encoding %q (want raw, base64 or hex)", enc)
	}
	for i, k := range keys {
		b, err := decode(string(k))
		if err != nil || len(b) == 0 {
			return fmt.Errorf("secret %d is not %s", number(i), enc)
		}
		keys[i] = b
	}
	return nil
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
//		algorithm        md5|sha1|sha256|sha512
//		encoding         hex|base64
//		secret_encoding  raw|base64|hex
//		prefix           <text>
//		signature_param  <key>
//		timestamp_param  <key>
//		timestamp_header <name>
//		timestamp_format unix|unix_ms|rfc3339
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
	case "prefix":
		return true, oneArg(d, &h.Prefix)
	case "signature_param":
		return true, oneArg(d, &h.SignatureParam)
	case "timestamp_param":
		return true, oneArg(d, &h.TimestampParam)
	case "secret_encoding":
		if err := oneArg(d, &h.SecretEncoding); err != nil {
			return true, err
		}
		if h.SecretEncoding != "raw" && h.SecretEncoding != "base64" && h.SecretEncoding != "hex" {
			return true, d.Errf("unknown secret_encoding %q (want raw, base64 or hex)", h.SecretEncoding)
		}
	default:
		return signedOptions{&h.Encoding, &h.TimestampHeader, &h.TimestampFormat, &h.IDHeader, &h.SignedContent, &h.ToleranceConfig}.parse(d, name)
	}
	return true, nil
}

// hashByName returns the hash named by the algorithm option.
func hashByName(name string) (func() hash.Hash, error) {
	switch name {
	case "md5":
		return md5.New, nil
	case "sha1":
		return sha1.New, nil
	case "sha256":
		return sha256.New, nil
	case "sha512":
		return sha512.New, nil
	}
	return nil, fmt.Errorf("unknown algorithm %q (want md5, sha1, sha256 or sha512)", name)
}

// signed is what the generic schemes (hmac, ed25519) compile from their
// timestamp and signed_content options: the template, whether it uses
// {id}, how the timestamp is read and its tolerance.
type signed struct {
	tmpl      []templatePart
	usesID    bool
	parseTime func(string) (int64, error)
	tolerance time.Duration
}

// compileSigned checks and compiles the options of a generic scheme that
// say what is signed: the template must include {body}, and {timestamp}
// exactly when a timestamp is read (one that is not signed proves nothing
// about replay); timestamp_format and tolerance need a timestamp, whose
// default tolerance is DefaultTolerance. timestampOptions names the
// options that read one, for the errors.
func compileSigned(tpl, format string, tol *ToleranceConfig, timestamped bool, timestampOptions string) (signed, error) {
	var c signed
	var err error
	if c.parseTime, err = timestampFormat(format); err != nil {
		return c, err
	}
	if format != "" && !timestamped {
		return c, fmt.Errorf("timestamp_format needs %s", timestampOptions)
	}
	def := DefaultTolerance
	if !timestamped {
		def = 0
	}
	if c.tolerance, err = tol.compile(def); err != nil {
		return c, err
	}
	if !timestamped && c.tolerance != 0 {
		return c, fmt.Errorf("tolerance needs %s", timestampOptions)
	}
	tmpl, uses, err := parseTemplate(tpl)
	switch {
	case err != nil:
		return c, err
	case !uses["body"]:
		return c, errors.New("signed_content must include {body}")
	case uses["timestamp"] && !timestamped:
		return c, fmt.Errorf("signed_content uses {timestamp} but no timestamp is read (%s)", timestampOptions)
	case !uses["timestamp"] && timestamped:
		return c, fmt.Errorf("a timestamp is read (%s) but signed_content does not include {timestamp}", timestampOptions)
	}
	c.tmpl, c.usesID = tmpl, uses["id"]
	return c, nil
}

// signedOptions are the Caddyfile options the generic schemes share, each
// read into its field and checked as it is read.
type signedOptions struct {
	encoding, timestampHeader, timestampFormat, idHeader, signedContent *string
	tolerance                                                           *ToleranceConfig
}

// parse reads the option name when it is one of them (false otherwise).
func (o signedOptions) parse(d *caddyfile.Dispenser, name string) (bool, error) {
	switch name {
	case "encoding":
		if err := oneArg(d, o.encoding); err != nil {
			return true, err
		}
		if !Encoding(*o.encoding).Valid() {
			return true, d.Errf("unknown encoding %q (want hex or base64)", *o.encoding)
		}
	case "timestamp_header":
		return true, oneArg(d, o.timestampHeader)
	case "timestamp_format":
		if err := oneArg(d, o.timestampFormat); err != nil {
			return true, err
		}
		if _, err := timestampFormat(*o.timestampFormat); err != nil {
			return true, d.Err(err.Error())
		}
	case "id_header":
		return true, oneArg(d, o.idHeader)
	case "signed_content":
		if err := oneArg(d, o.signedContent); err != nil {
			return true, err
		}
		if _, _, err := parseTemplate(*o.signedContent); err != nil {
			return true, d.Err(err.Error())
		}
	case "tolerance":
		return true, o.tolerance.parse(d)
	default:
		return false, nil
	}
	return true, nil
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
