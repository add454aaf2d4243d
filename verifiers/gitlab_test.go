package verifiers

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// GitLab signs nothing, so there is no official vector (shared/SIGNATURES.md;
// gitlabhq doc/user/project/integrations/webhooks.md: "GitLab sends the
// token in the X-Gitlab-Token HTTP header"). The token below is made up.
const (
	glToken = "glwt-Th1s-is-a-t0ken"
	glBody  = `{"object_kind":"push","event_name":"push"}`
)

func provisionGitLab(t testing.TB, g GitLab) *GitLab {
	t.Helper()
	if err := g.Provision(testContext(t)); err != nil {
		t.Fatalf("provision: %v", err)
	}
	return &g
}

func TestGitLabVerify(t *testing.T) {
	one := GitLab{Secrets: []string{glToken}}
	now := time.Unix(1700000000, 0)
	for _, tc := range []struct {
		name    string
		cfg     GitLab
		headers []string
		body    string
		want    error
	}{
		{name: "configured token", cfg: one, headers: []string{"X-Gitlab-Token", glToken}, body: glBody},
		{name: "header name in any case", cfg: one, headers: []string{"x-gitlab-token", glToken}, body: glBody},
		{name: "body is not authenticated", cfg: one, headers: []string{"X-Gitlab-Token", glToken}, body: "anything"},
		{name: "wrong token", cfg: one, headers: []string{"X-Gitlab-Token", "glwt-Th1s-is-a-t0keN"}, body: glBody, want: ErrMismatch},
		{name: "token in other case", cfg: one, headers: []string{"X-Gitlab-Token", strings.ToUpper(glToken)}, body: glBody, want: ErrMismatch},
		{name: "truncated token", cfg: one, headers: []string{"X-Gitlab-Token", glToken[:len(glToken)-1]}, body: glBody, want: ErrMismatch},
		{name: "longer token", cfg: one, headers: []string{"X-Gitlab-Token", glToken + "x"}, body: glBody, want: ErrMismatch},
		{name: "token with trailing space", cfg: one, headers: []string{"X-Gitlab-Token", glToken + " "}, body: glBody, want: ErrMismatch},
		{name: "token with a prefix", cfg: one, headers: []string{"X-Gitlab-Token", "Bearer " + glToken}, body: glBody, want: ErrMismatch},
		{name: "missing header", cfg: one, body: glBody, want: ErrFormat},
		{name: "empty header", cfg: one, headers: []string{"X-Gitlab-Token", ""}, body: glBody, want: ErrFormat},
		{name: "token in another header", cfg: one, headers: []string{"X-Gitlab-Signature", glToken}, body: glBody, want: ErrFormat},
		{name: "rotation: second token matches", cfg: GitLab{Secrets: []string{"new-token", glToken}}, headers: []string{"X-Gitlab-Token", glToken}, body: glBody},
		{name: "rotation: first token matches", cfg: GitLab{Secrets: []string{glToken, "old-token"}}, headers: []string{"X-Gitlab-Token", glToken}, body: glBody},
		{name: "rotation: no token matches", cfg: GitLab{Secrets: []string{"new-token", "old-token"}}, headers: []string{"X-Gitlab-Token", glToken}, body: glBody, want: ErrMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := provisionGitLab(t, tc.cfg)
			err := g.Verify(newRequest(tc.headers...), []byte(tc.body), now)
			checkErr(t, err, tc.want, glToken, "new-token", "old-token")
		})
	}
}

func TestGitLabProvision(t *testing.T) {
	t.Setenv("HOOKLINE_TEST_GL", glToken)
	for _, tc := range []struct {
		name    string
		secrets []string
		wantErr bool
	}{
		{name: "literal", secrets: []string{glToken}},
		{name: "env", secrets: []string{"{env.HOOKLINE_TEST_GL}"}},
		{name: "unset old token ignored", secrets: []string{"{env.HOOKLINE_TEST_UNSET_XYZ}", "{env.HOOKLINE_TEST_GL}"}},
		{name: "none", wantErr: true},
		{name: "all empty", secrets: []string{"", "{env.HOOKLINE_TEST_UNSET_XYZ}"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := GitLab{Secrets: tc.secrets}
			err := g.Provision(testContext(t))
			if tc.wantErr {
				if err == nil {
					t.Fatal("want error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g.Secrets, tc.secrets) {
				t.Fatal("Provision changed the configured tokens")
			}
			checkErr(t, g.Verify(newRequest("X-Gitlab-Token", glToken), []byte(glBody), time.Now()), nil)
			checkErr(t, g.Verify(newRequest("X-Gitlab-Token", "{env.HOOKLINE_TEST_GL}"), []byte(glBody), time.Now()), ErrMismatch)
		})
	}
}

func TestGitLabDefaultIDFrom(t *testing.T) {
	got := ruleStrings((&GitLab{}).DefaultIDFrom())
	if want := []string{"header Idempotency-Key", "raw_hash X-Gitlab-Event-UUID"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("DefaultIDFrom() = %v, want %v", got, want)
	}
}

func TestGitLabUnmarshalCaddyfile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		input   string
		want    GitLab
		wantErr bool
	}{
		{name: "one token", input: `gitlab {env.GITLAB_TOKEN}`, want: GitLab{Secrets: []string{"{env.GITLAB_TOKEN}"}}},
		{name: "rotation on the line", input: `gitlab new old`, want: GitLab{Secrets: []string{"new", "old"}}},
		{name: "block", input: "gitlab a {\n secret b\n secret c d\n}", want: GitLab{Secrets: []string{"a", "b", "c", "d"}}},
		{name: "secret without value", input: "gitlab {\n secret\n}", wantErr: true},
		{name: "unknown option", input: "gitlab s {\n tolerance 5m\n}", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g GitLab
			err := g.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want error", g)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", g, tc.want)
			}
		})
	}
}

func TestGitLabModule(t *testing.T) {
	ctx := testContext(t)
	v, err := ctx.LoadModuleByID("webhooks.verifiers.gitlab", json.RawMessage(`{"secrets":["glwt-Th1s-is-a-t0ken"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.(IDDefaulter); !ok {
		t.Fatalf("%T is not an IDDefaulter", v)
	}
	checkErr(t, v.(Verifier).Verify(newRequest("X-Gitlab-Token", glToken), []byte(glBody), time.Now()), nil)
	if _, err := ctx.LoadModuleByID("webhooks.verifiers.gitlab", json.RawMessage(`{}`)); err == nil {
		t.Fatal("module without tokens provisioned")
	}
	if _, err := ctx.LoadModuleByID("webhooks.verifiers.gitlab", json.RawMessage(`{"tokens":["x"]}`)); err == nil {
		t.Fatal("unknown JSON field accepted")
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

	g := provisionGitLab(f, GitLab{Secrets: []string{glToken, "old-token"}})
	now := time.Unix(1700000000, 0)

	f.Fuzz(func(t *testing.T, tok string) {
		r := newRequest()
		r.Header["X-Gitlab-Token"] = []string{tok}
		err := g.Verify(r, []byte(glBody), now)
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrMismatch) {
				t.Fatalf("undocumented error %v", err)
			}
			if strings.Contains(err.Error(), glToken) || strings.Contains(err.Error(), "old-token") {
				t.Fatalf("error leaks a token: %v", err)
			}
			if tok == glToken || tok == "old-token" {
				t.Fatalf("refused configured token %q: %v", tok, err)
			}
			return
		}
		if tok != glToken && tok != "old-token" {
			t.Fatalf("accepted %q", tok)
		}
	})
}

func BenchmarkVerifyGitLab(b *testing.B) {
	body := []byte(`{"x":"` + strings.Repeat("a", 1024-8) + `"}`) // 1 KiB
	g := provisionGitLab(b, GitLab{Secrets: []string{glToken}})
	r := newRequest("X-Gitlab-Token", glToken)
	now := time.Now()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := g.Verify(r, body, now); err != nil {
			b.Fatal(err)
		}
	}
}
