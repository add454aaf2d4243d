package verifiers

// SecretHeaderer is implemented by schemes whose provider sends the
// configured secret itself in a request header (GitLab's X-Gitlab-Token),
// rather than a signature computed with it. The ingress drops those
// headers once the request is verified, before the event is stored, so
// the secret is never stored, shown or forwarded to the upstream. Header
// names are case-insensitive.
type SecretHeaderer interface {
	SecretHeaders() []string
}

// SecretHeaders returns X-Gitlab-Token: it carries the configured token.
func (*GitLab) SecretHeaders() []string { return []string{GitLabTokenHeader} }

// Interface guards
var _ SecretHeaderer = (*GitLab)(nil)
