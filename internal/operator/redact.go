package operator

import (
	"net/http"
	"strings"

	"github.com/hookline/hookline/storage"
)

// Redacted replaces a credential in what the API shows (and so the CLI
// and the dashboard, which read it).
const Redacted = "[redacted]"

// credentialHeaders may carry credentials: they are stored and forwarded
// (the upstream may need them) but never shown (README.md, "Caddyfile").
// X-Gitlab-Token is the GitLab scheme's secret itself: the ingress drops
// it once verified, but events stored before it did may still hold it.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "X-Gitlab-Token"}

// RedactHeaders returns h as the API shows it: a copy with the
// values of credential-bearing headers replaced by Redacted. h is not
// modified.
func RedactHeaders(h http.Header) http.Header {
	if h == nil {
		return nil
	}
	out := h.Clone()
	for name, vv := range out {
		for _, c := range credentialHeaders {
			if strings.EqualFold(name, c) {
				red := make([]string, len(vv))
				for i := range red {
					red[i] = Redacted
				}
				out[name] = red
				break
			}
		}
	}
	return out
}

// RedactURL returns u as the API shows it: user info (such as
// https://user:pass@host/) replaced by Redacted (https://[redacted]@host/).
// It works on the text, so it also covers URLs url.Parse refuses.
func RedactURL(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return u
	}
	start := i + len("://")
	end := len(u)
	if j := strings.IndexAny(u[start:], "/?#"); j >= 0 {
		end = start + j
	}
	at := strings.LastIndex(u[start:end], "@")
	if at < 0 {
		return u
	}
	return u[:start] + Redacted + u[start+at:]
}

// redactEntry returns a copy of e as the API shows it: credentials in its
// headers and upstream URL, and the secrets its source's scheme carries in
// the body (App.RedactPayload), replaced.
func redactEntry(app App, e storage.DLQEntry) storage.DLQEntry {
	e.Headers = RedactHeaders(e.Headers)
	e.Upstream = RedactURL(e.Upstream)
	if len(e.Payload) > 0 {
		e.Payload = app.RedactPayload(e.Source, e.Payload)
	}
	return e
}
