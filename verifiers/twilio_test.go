package verifiers

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// The official vectors of twilio/twilio-python
// tests/unit/test_request_validator.py (@306691e7) and twilio/twilio-node
// spec/validation.spec.js (@45d3d65a), docs/signatures.md. Auth Token
// "12345", URL https://mycompany.com/myapp.php?foo=1&bar=2, and the
// parameters CallSid=CA1234567890ABCDE, Caller=+14158675309, Digits=1234,
// From=+14158675309, To=+18005551212:
//
//	RSOYDt4T1cUTdK1PDd93/VVr8B8=  the URL as is (also valid for the URL with :1234, port removed)
//	kvajT1Ptam85bY51eRf/AJRuM3w=  the URL with :443
//	Zmvh+3yNM1Phv2jhDCwEM3q5ebU=  http://mycompany.com:1234/...
//	0ZXoZLH/DfblKGATFgpif+LLRf4=  http://mycompany.com:80/... (valid for http://mycompany.com/...)
//	CukzLTc1tT5dXEDIHm/tKBanW10=  https://user:pass@mycompany.com/... (ZQFR1PTIZXF2MXB8ZnKCvnnA+rI= with :443)
//	2YRLlVAflCqxaNicjMpJcSTgzSs=  https://user@mycompany.com/...
//	dsq4Ehbj6cs+KdTkpF5sSSplOWw=  the URL + "&Body=It's+amazing"
//	IK+Dwps556ElfBT0I3Rgjkr1wJU=  Sid=CA123, SidAccount=AC123, Digits=5678 and Digits=1234 (node: and 1234 again)
//	83O6e2vORAoJHUNzJjDWN1jz+BA=  MessagingBinding.Address=+1325xxxxxxx and +1415xxxxxxx, in either order
//
// and for JSON bodies, body {"property": "value", "boolean": true} with
// SHA-256 0a1ff763...6620:
//
//	a9nBmqA0ju/hNViExpshrM61xv4=  the URL + "&bodySHA256=0a1ff763...6620"
//	y77kIzt2vzLz71DgmJGsen2scGs=  https://mycompany.com/myapp.php?bodySHA256=0a1ff763...6620
//	Ldidvp12m26NI7eqEvxnEpkd9Hc=  the URL + "&bodySHA256=44136fa3...ff8a" (SHA-256 of "{}"), signed with :443
const (
	twToken    = "12345"
	twHost     = "mycompany.com"
	twURI      = "/myapp.php?foo=1&bar=2"
	twForm     = "To=%2B18005551212&CallSid=CA1234567890ABCDE&From=%2B14158675309&Caller=%2B14158675309&Digits=1234"
	twSig      = "RSOYDt4T1cUTdK1PDd93/VVr8B8="
	twSig443   = "kvajT1Ptam85bY51eRf/AJRuM3w="
	twSigHTTP  = "Zmvh+3yNM1Phv2jhDCwEM3q5ebU="
	twSig80    = "0ZXoZLH/DfblKGATFgpif+LLRf4="
	twSigCreds = "CukzLTc1tT5dXEDIHm/tKBanW10="
	twSigCr443 = "ZQFR1PTIZXF2MXB8ZnKCvnnA+rI="
	twSigUser  = "2YRLlVAflCqxaNicjMpJcSTgzSs="
	twSigQuote = "dsq4Ehbj6cs+KdTkpF5sSSplOWw="
	twSigDup   = "IK+Dwps556ElfBT0I3Rgjkr1wJU="
	twSigArray = "83O6e2vORAoJHUNzJjDWN1jz+BA="
	twJSON     = `{"property": "value", "boolean": true}`
	twJSONHash = "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620"
	twSigJSON  = "a9nBmqA0ju/hNViExpshrM61xv4="
	twSigShort = "y77kIzt2vzLz71DgmJGsen2scGs="
	twEmptyHex = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
	twSigEmpty = "Ldidvp12m26NI7eqEvxnEpkd9Hc="
	formCT     = "application/x-www-form-urlencoded"
)

// twilioBenchBody is a 1 KiB form body, as Twilio posts an SMS.
func twilioBenchBody() []byte {
	prefix := "AccountSid=AC00000000000000000000000000000000&ApiVersion=2010-04-01&From=%2B14158675309&MessageSid=SM00000000000000000000000000000000&To=%2B18005551212&Body="
	return []byte(prefix + strings.Repeat("a", 1024-len(prefix)))
}

// twExpected computes a Twilio signature the way twilio-python's
// RequestValidator.compute_signature does, independently of Twilio.Verify:
// the URL, then for each sorted name each sorted distinct value.
func twExpected(token, fullURL string, params url.Values) string {
	s := fullURL
	names := make([]string, 0, len(params))
	for n := range params {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		set := map[string]bool{}
		var vals []string
		for _, v := range params[n] {
			if !set[v] {
				set[v] = true
				vals = append(vals, v)
			}
		}
		sort.Strings(vals)
		for _, v := range vals {
			s += n + v
		}
	}
	m := hmac.New(sha1.New, []byte(token))
	m.Write([]byte(s))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// twReq is one request of the Twilio tests.
type twReq struct {
	https bool
	host  string // Host header
	uri   string // request-target
	ct    string // Content-Type
	body  string
	sig   string // X-Twilio-Signature; "" leaves it out
}

func (q twReq) build() *http.Request {
	r := httptest.NewRequest(http.MethodPost, q.uri, strings.NewReader(q.body))
	r.Host = q.host
	r.TLS = nil
	if q.https {
		r.TLS = &tls.ConnectionState{}
	}
	if q.ct != "" {
		r.Header.Set("Content-Type", q.ct)
	}
	if q.sig != "" {
		r.Header.Set("X-Twilio-Signature", q.sig)
	}
	return r
}

func TestTwilioVectorsAreIndependent(t *testing.T) {
	params, _ := url.ParseQuery(twForm)
	u := "https://mycompany.com/myapp.php?foo=1&bar=2"
	for _, c := range []struct{ url, want string }{
		{u, twSig},
		{strings.Replace(u, ".com", ".com:443", 1), twSig443},
		{strings.Replace(strings.Replace(u, ".com", ".com:1234", 1), "https", "http", 1), twSigHTTP},
		{strings.Replace(strings.Replace(u, ".com", ".com:80", 1), "https", "http", 1), twSig80},
		{strings.Replace(u, "//", "//user:pass@", 1), twSigCreds},
		{u + "&Body=It's+amazing", twSigQuote},
	} {
		if got := twExpected(twToken, c.url, params); got != c.want {
			t.Errorf("signature of %s = %s, want the official %s", c.url, got, c.want)
		}
	}
	if got := twExpected(twToken, u, url.Values{"Sid": {"CA123"}, "SidAccount": {"AC123"}, "Digits": {"5678", "1234", "1234"}}); got != twSigDup {
		t.Errorf("duplicate params: %s, want %s", got, twSigDup)
	}
	if s := sha256.Sum256([]byte(twJSON)); hex.EncodeToString(s[:]) != twJSONHash {
		t.Errorf("bodySHA256 of the JSON body is %x", s)
	}
	if s := sha256.Sum256([]byte("{}")); hex.EncodeToString(s[:]) != twEmptyHex {
		t.Errorf("bodySHA256 of {} is %x", s)
	}
}

func TestTwilioVerify(t *testing.T) {
	one := Twilio{SecretsConfig: keyed(twToken)}
	withURL := func(u string) Twilio { return Twilio{SecretsConfig: keyed(twToken), URL: u} }
	official := twReq{https: true, host: twHost, uri: twURI, ct: formCT, body: twForm, sig: twSig}
	mod := func(f func(*twReq)) twReq { q := official; f(&q); return q }
	jsonReq := twReq{https: true, host: twHost, uri: twURI + "&bodySHA256=" + twJSONHash, ct: "application/json", body: twJSON, sig: twSigJSON}
	jmod := func(f func(*twReq)) twReq { q := jsonReq; f(&q); return q }

	// independently computed signatures for cases without an official vector
	params, _ := url.ParseQuery(twForm)
	withEmpty, _ := url.ParseQuery(twForm + "&Empty=")
	sigEmptyParam := twExpected(twToken, "https://mycompany.com"+twURI, withEmpty)
	sigPrefix := twExpected(twToken, "https://hooks.example.com/twilio/sms?x=1", params)
	sigIPv6 := twExpected(twToken, "http://[::1]"+twURI, params)
	upperHashURI := twURI + "&bodySHA256=" + strings.ToUpper(twJSONHash)
	sigUpperHash := twExpected(twToken, "https://mycompany.com"+upperHashURI, nil)
	otherHash := strings.Repeat("ab", 32)
	sigOtherHash := twExpected(twToken, "https://mycompany.com"+twURI+"&bodySHA256="+otherHash, nil)
	sigNoBody := twExpected(twToken, "https://mycompany.com"+twURI, nil)

	for _, tc := range []struct {
		name string
		cfg  Twilio
		req  twReq
		want error
	}{
		// official vectors
		{name: "official: form params", cfg: one, req: official},
		{name: "official: https URL with a port, port removed", cfg: one, req: mod(func(q *twReq) { q.host = twHost + ":1234" })},
		{name: "official: http URL with a port", cfg: one, req: mod(func(q *twReq) { q.https = false; q.host = twHost + ":1234"; q.sig = twSigHTTP })},
		{name: "official: https URL, signed with :443 added", cfg: one, req: mod(func(q *twReq) { q.sig = twSig443 })},
		{name: "official: http URL, signed with :80 added", cfg: one, req: mod(func(q *twReq) { q.https = false; q.sig = twSig80 })},
		{name: "official: https URL with :443, signed without", cfg: one, req: mod(func(q *twReq) { q.host = twHost + ":443" })},
		{name: "official: duplicate params", cfg: one, req: mod(func(q *twReq) { q.body = "Sid=CA123&SidAccount=AC123&Digits=5678&Digits=1234"; q.sig = twSigDup })},
		{name: "official: duplicate params, repeated value", cfg: one, req: mod(func(q *twReq) {
			q.body = "Digits=5678&Digits=1234&Sid=CA123&Digits=1234&SidAccount=AC123"
			q.sig = twSigDup
		})},
		{name: "official: array param", cfg: one, req: mod(func(q *twReq) {
			q.body = "MessagingBinding.Address=%2B1325xxxxxxx&MessagingBinding.Address=%2B1415xxxxxxx"
			q.sig = twSigArray
		})},
		{name: "official: array param, values in the other order", cfg: one, req: mod(func(q *twReq) {
			q.body = "MessagingBinding.Address=%2B1415xxxxxxx&MessagingBinding.Address=%2B1325xxxxxxx"
			q.sig = twSigArray
		})},
		{name: "official: special characters in the URL", cfg: one, req: mod(func(q *twReq) { q.uri = twURI + "&Body=It's+amazing"; q.sig = twSigQuote })},
		{name: "official: special characters, ' sent as %27", cfg: one, req: mod(func(q *twReq) { q.uri = twURI + "&Body=It%27s+amazing"; q.sig = twSigQuote })},
		{name: "official: credentials in the URL", cfg: withURL("https://user:pass@mycompany.com"), req: mod(func(q *twReq) { q.https = false; q.host = "127.0.0.1:8080"; q.sig = twSigCreds })},
		{name: "official: credentials in the URL, signed with :443", cfg: withURL("https://user:pass@mycompany.com"), req: mod(func(q *twReq) { q.sig = twSigCr443 })},
		{name: "official: user only in the URL", cfg: withURL("https://user@mycompany.com"), req: mod(func(q *twReq) { q.sig = twSigUser })},
		{name: "official: JSON body with bodySHA256", cfg: one, req: jsonReq},
		{name: "official: JSON body, bodySHA256 the only query parameter", cfg: one, req: jmod(func(q *twReq) { q.uri = "/myapp.php?bodySHA256=" + twJSONHash; q.sig = twSigShort })},
		{name: "official: JSON body {}, signed with :443", cfg: one, req: jmod(func(q *twReq) { q.uri = twURI + "&bodySHA256=" + twEmptyHex; q.body = "{}"; q.sig = twSigEmpty })},
		{name: "official: body but no bodySHA256", cfg: one, req: jmod(func(q *twReq) { q.uri = twURI; q.sig = twSig }), want: ErrFormat},
		{name: "official: bodySHA256 cut short", cfg: one, req: jmod(func(q *twReq) { q.uri = jsonReq.uri[:len(jsonReq.uri)-1] }), want: ErrFormat},
		{name: "official: unexpected query parameter", cfg: one, req: mod(func(q *twReq) { q.uri = twURI + "&somethingUnexpected=true" }), want: ErrMismatch},
		{name: "official: WRONG_SIGNATURE", cfg: one, req: mod(func(q *twReq) { q.sig = "WRONG_SIGNATURE" }), want: ErrFormat},
		{name: "official: no signature", cfg: one, req: mod(func(q *twReq) { q.sig = "" }), want: ErrFormat},
		{name: "official: url option overrides host and scheme", cfg: withURL("https://mycompany.com"), req: mod(func(q *twReq) { q.https = false; q.host = "someothercompany.com" })},

		// parameter handling
		{name: "form params in another order", cfg: one, req: mod(func(q *twReq) {
			q.body = "Digits=1234&Caller=%2B14158675309&To=%2B18005551212&From=%2B14158675309&CallSid=CA1234567890ABCDE"
		})},
		{name: "form Content-Type with charset", cfg: one, req: mod(func(q *twReq) { q.ct = "application/x-www-form-urlencoded; charset=utf-8" })},
		{name: "form Content-Type in upper case", cfg: one, req: mod(func(q *twReq) { q.ct = "Application/X-WWW-Form-Urlencoded" })},
		{name: "empty-valued param is signed", cfg: one, req: mod(func(q *twReq) { q.body = twForm + "&Empty="; q.sig = sigEmptyParam })},
		{name: "empty-valued param left out of the signature", cfg: one, req: mod(func(q *twReq) { q.body = twForm + "&Empty=" }), want: ErrMismatch},
		{name: "one param value changed", cfg: one, req: mod(func(q *twReq) { q.body = strings.Replace(twForm, "Digits=1234", "Digits=1235", 1) }), want: ErrMismatch},
		{name: "extra param", cfg: one, req: mod(func(q *twReq) { q.body = twForm + "&Extra=1" }), want: ErrMismatch},
		{name: "param missing", cfg: one, req: mod(func(q *twReq) { q.body = strings.Replace(twForm, "&Digits=1234", "", 1) }), want: ErrMismatch},
		{name: "param name case changed", cfg: one, req: mod(func(q *twReq) { q.body = strings.Replace(twForm, "Digits=", "digits=", 1) }), want: ErrMismatch},
		{name: "form body that does not parse", cfg: one, req: mod(func(q *twReq) { q.body = twForm + "&Bad=%zz" }), want: ErrFormat},
		{name: "form body sent as text/plain", cfg: one, req: mod(func(q *twReq) { q.ct = "text/plain" }), want: ErrFormat},
		{name: "form body without Content-Type", cfg: one, req: mod(func(q *twReq) { q.ct = "" }), want: ErrFormat},
		{name: "no body and no params", cfg: one, req: mod(func(q *twReq) { q.ct = ""; q.body = ""; q.sig = sigNoBody })},

		// JSON bodies and bodySHA256
		{name: "JSON body changed, URL and signature intact", cfg: one, req: jmod(func(q *twReq) { q.body = `{"property": "value", "boolean": false}` }), want: ErrMismatch},
		{name: "JSON body re-serialized", cfg: one, req: jmod(func(q *twReq) { q.body = `{"property":"value","boolean":true}` }), want: ErrMismatch},
		{name: "bodySHA256 of another body, correctly signed", cfg: one, req: jmod(func(q *twReq) { q.uri = twURI + "&bodySHA256=" + otherHash; q.sig = sigOtherHash }), want: ErrMismatch},
		{name: "bodySHA256 in upper case, correctly signed", cfg: one, req: jmod(func(q *twReq) { q.uri = upperHashURI; q.sig = sigUpperHash }), want: ErrMismatch},
		{name: "bodySHA256 not hex", cfg: one, req: jmod(func(q *twReq) { q.uri = twURI + "&bodySHA256=" + strings.Repeat("zz", 32) }), want: ErrFormat},
		{name: "bodySHA256 with a form body: the body is what the hash covers", cfg: one, req: jmod(func(q *twReq) { q.ct = formCT })},

		// URL reconstruction
		{name: "https signature, request over plain http", cfg: one, req: mod(func(q *twReq) { q.https = false }), want: ErrMismatch},
		{name: "other host", cfg: one, req: mod(func(q *twReq) { q.host = "mycompany.org" }), want: ErrMismatch},
		{name: "other path", cfg: one, req: mod(func(q *twReq) { q.uri = "/myapp.php?foo=1&bar=3" }), want: ErrMismatch},
		{name: "query in another order", cfg: one, req: mod(func(q *twReq) { q.uri = "/myapp.php?bar=2&foo=1" }), want: ErrMismatch},
		{name: "url option, port 8443 removed", cfg: withURL("https://mycompany.com:8443"), req: official},
		{name: "url option with a path prefix", cfg: withURL("https://hooks.example.com/twilio/"), req: mod(func(q *twReq) { q.uri = "/sms?x=1"; q.sig = sigPrefix })},
		{name: "url option with the wrong scheme", cfg: withURL("http://mycompany.com"), req: official, want: ErrMismatch},
		{name: "IPv6 host with a port", cfg: one, req: mod(func(q *twReq) { q.https = false; q.host = "[::1]:8080"; q.sig = sigIPv6 })},
		{name: "absolute-form request-target", cfg: one, req: mod(func(q *twReq) { q.uri = "https://mycompany.com" + twURI })},

		// signature encoding
		{name: "a label before the signature", cfg: one, req: mod(func(q *twReq) { q.sig = "sha1=" + twSig }), want: ErrFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := provision(t, tc.cfg).Verify(tc.req.build(), []byte(tc.req.body), time.Now())
			checkErr(t, err, tc.want, twToken, twSig)
		})
	}
}

func TestTwilioOriginalRequestURI(t *testing.T) {
	// a Caddy rewrite (handle_path, uri strip_prefix) changes r.URL and
	// r.RequestURI; the signed URL is the one Twilio called
	tw := provision(t, Twilio{SecretsConfig: keyed(twToken)})
	r := twReq{https: true, host: twHost, uri: twURI, ct: formCT, body: twForm, sig: twSig}.build()
	orig := *r
	r2 := r.WithContext(context.WithValue(r.Context(), caddyhttp.OriginalRequestCtxKey, orig))
	r2.URL, _ = url.Parse("/rewritten?foo=1&bar=2")
	r2.RequestURI = "/rewritten?foo=1&bar=2"
	checkErr(t, tw.Verify(r2, []byte(twForm), time.Now()), nil)

	// without the original, the rewritten URI is what is checked
	r3 := twReq{https: true, host: twHost, uri: "/rewritten?foo=1&bar=2", ct: formCT, body: twForm, sig: twSig}.build()
	checkErr(t, tw.Verify(r3, []byte(twForm), time.Now()), ErrMismatch)
}

func TestTwilioErrorsErrFormatWithoutHost(t *testing.T) {
	tw := provision(t, Twilio{SecretsConfig: keyed(twToken)})
	r := twReq{https: true, host: "", uri: twURI, ct: formCT, body: twForm, sig: twSig}.build()
	r.URL.Host = ""
	checkErr(t, tw.Verify(r, []byte(twForm), time.Now()), ErrFormat)
	// the url option needs no Host
	tw = provision(t, Twilio{SecretsConfig: keyed(twToken), URL: "https://mycompany.com"})
	checkErr(t, tw.Verify(r, []byte(twForm), time.Now()), nil)
}

// TestTwilioProvision: the url option is resolved and checked; the
// configuration is left as it was.
func TestTwilioProvision(t *testing.T) {
	t.Setenv("HOOKLINE_TEST_TWILIO_URL", "https://mycompany.com")
	withURL := func(u string) Twilio { return Twilio{SecretsConfig: keyed(twToken), URL: u} }
	runProvisionCases(t, []provisionCase[Twilio]{
		{name: "url from env", cfg: withURL("{env.HOOKLINE_TEST_TWILIO_URL}")},
		{name: "url with a trailing slash", cfg: withURL("https://mycompany.com/")},
		{name: "url in upper case scheme", cfg: withURL("HTTPS://mycompany.com")},
		{name: "url resolves to nothing", cfg: withURL("{env.HOOKLINE_TEST_UNSET_XYZ}"), wantErr: "url is empty"},
		{name: "url without scheme", cfg: withURL("mycompany.com"), wantErr: "must be an absolute http or https URL"},
		{name: "url with another scheme", cfg: withURL("ftp://mycompany.com"), wantErr: "must be an absolute http or https URL"},
		{name: "url without host", cfg: withURL("https:///path"), wantErr: "must be an absolute http or https URL"},
		{name: "url with a query", cfg: withURL("https://mycompany.com/?a=1"), wantErr: "must not have a query or fragment"},
		{name: "url with a fragment", cfg: withURL("https://mycompany.com/#f"), wantErr: "must not have a query or fragment"},
		{name: "url that does not parse", cfg: withURL("https://my company.com:x/"), wantErr: "invalid port"},
	}, func(t *testing.T, tw *Twilio) {
		r := twReq{https: true, host: twHost, uri: twURI, ct: formCT, body: twForm, sig: twSig}.build()
		checkErr(t, tw.Verify(r, []byte(twForm), time.Now()), nil)
	}, twToken)
}

// FuzzTwilioHeader feeds arbitrary X-Twilio-Signature values and form
// bodies to a fixed URL. Verify must never panic, must never report
// anything but the documented errors, and must accept only the signature
// twExpected computes for the URL (with or without :443) and the params.
func FuzzTwilioHeader(f *testing.F) {
	f.Add([]byte(twForm), twSig)
	f.Add([]byte(twForm), twSig443)
	f.Add([]byte("Sid=CA123&SidAccount=AC123&Digits=5678&Digits=1234"), twSigDup)
	f.Add([]byte(twForm+"&x=%zz"), twSig)
	f.Add([]byte(twForm), strings.TrimRight(twSig, "="))
	f.Add([]byte(""), "")
	f.Add([]byte("a&&=b;c"), "AAAAAAAAAAAAAAAAAAAAAAAAAAA=")

	tw := provision(f, Twilio{SecretsConfig: keyed(twToken)})
	request := func(...string) *http.Request { return twReq{https: true, host: twHost, uri: twURI, ct: formCT}.build() }
	fuzzHeader(f, tw, request, "X-Twilio-Signature", time.Now(), false, func(t *testing.T, body []byte, sig string) {
		params, perr := url.ParseQuery(string(body))
		if perr != nil {
			t.Fatalf("accepted an unparsable body %q", body)
		}
		if sig != twExpected(twToken, "https://mycompany.com"+twURI, params) && sig != twExpected(twToken, "https://mycompany.com:443"+twURI, params) {
			t.Fatalf("accepted %q for body %q", sig, body)
		}
	}, twToken)
}
