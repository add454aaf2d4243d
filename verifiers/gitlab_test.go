package verifiers

import (
	"strings"
	"testing"
	"time"
)

// GitLab signs nothing, so there is no official vector (docs/signatures.md;
// gitlabhq doc/user/project/integrations/webhooks.md: "GitLab sends the
// token in the X-Gitlab-Token HTTP header"). The token below is made up.
const (
	glToken = "glwt-Th1s-is-a-t0ken"
	glBody  = `{"object_kind":"push","event_name":"push"}`
)

func TestGitLabVerify(t *testing.T) {
	one := GitLab{SecretsConfig: keyed(glToken)}
	runVerifyCases(t, newRequest, []verifyCase[GitLab]{
		{name: "configured token", cfg: one, headers: []string{"X-Gitlab-Token", glToken}, body: glBody},
		{name: "body is not authenticated", cfg: one, headers: []string{"X-Gitlab-Token", glToken}, body: "anything"},
		{name: "wrong token", cfg: one, headers: []string{"X-Gitlab-Token", "glwt-Th1s-is-a-t0keN"}, body: glBody, want: ErrMismatch},
		{name: "token in other case", cfg: one, headers: []string{"X-Gitlab-Token", strings.ToUpper(glToken)}, body: glBody, want: ErrMismatch},
		{name: "truncated token", cfg: one, headers: []string{"X-Gitlab-Token", glToken[:len(glToken)-1]}, body: glBody, want: ErrMismatch},
		{name: "longer token", cfg: one, headers: []string{"X-Gitlab-Token", glToken + "x"}, body: glBody, want: ErrMismatch},
		{name: "token with trailing space", cfg: one, headers: []string{"X-Gitlab-Token", glToken + " "}, body: glBody, want: ErrMismatch},
		{name: "token with a prefix", cfg: one, headers: []string{"X-Gitlab-Token", "Bearer " + glToken}, body: glBody, want: ErrMismatch},
		{name: "token in another header", cfg: one, headers: []string{"X-Gitlab-Signature", glToken}, body: glBody, want: ErrFormat},
		{name: "rotation: no token matches", cfg: GitLab{SecretsConfig: keyed("new-token", "old-token")}, headers: []string{"X-Gitlab-Token", glToken}, body: glBody, want: ErrMismatch},
	}, glToken, "new-token", "old-token")
}

// TestGitLabPlaceholderIsNotTheToken: a token configured as a placeholder
// is compared in its resolved form only.
func TestGitLabPlaceholderIsNotTheToken(t *testing.T) {
	t.Setenv("HOOKLINE_TEST_GL", glToken)
	g := provision(t, GitLab{SecretsConfig: keyed("{env.HOOKLINE_TEST_GL}")})
	checkErr(t, g.Verify(newRequest("X-Gitlab-Token", glToken), []byte(glBody), time.Now()), nil)
	checkErr(t, g.Verify(newRequest("X-Gitlab-Token", "{env.HOOKLINE_TEST_GL}"), []byte(glBody), time.Now()), ErrMismatch)
}

// TestGitLabSecretHeaders: the token header is dropped by the ingress once
// verified.
func TestGitLabSecretHeaders(t *testing.T) {
	if got := (&GitLab{}).SecretHeaders(); len(got) != 1 || got[0] != GitLabTokenHeader {
		t.Fatalf("SecretHeaders() = %q", got)
	}
}

// FuzzGitLabHeader feeds arbitrary X-Gitlab-Token values. Verify must
// never panic, must never report anything but the documented errors, and
// must accept only a configured token, byte for byte.
func FuzzGitLabHeader(f *testing.F) {
	f.Add(glToken)
	f.Add(glToken + " ")
	f.Add(strings.ToUpper(glToken))
	f.Add("old-token")
	f.Add("")
	f.Add("\x00")

	g := provision(f, GitLab{SecretsConfig: keyed(glToken, "old-token")})
	now := time.Unix(1700000000, 0)

	f.Fuzz(func(t *testing.T, tok string) {
		r := newRequest()
		r.Header["X-Gitlab-Token"] = []string{tok}
		configured := tok == glToken || tok == "old-token"
		if fuzzRefused(t, g.Verify(r, []byte(glBody), now), false, glToken, "old-token") {
			if configured {
				t.Fatalf("refused configured token %q", tok)
			}
			return
		}
		if !configured {
			t.Fatalf("accepted %q", tok)
		}
	})
}
