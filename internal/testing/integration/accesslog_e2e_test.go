package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAccessLogSecretWarning: a site that logs access and receives GitLab
// (its X-Gitlab-Token) and Meta (hub.verify_token) webhooks gets a warning
// naming both at load, unless its log has the README's filter; with it,
// the access log holds neither secret after a GitLab webhook and a Meta
// handshake went through.
func TestAccessLogSecretWarning(t *testing.T) {
	const token, verifyToken = "gitlab-token-in-access-log", "meta-verify-token-in-access-log"
	dir := t.TempDir()
	caddyLog, accessLog := filepath.Join(dir, "caddy.log"), filepath.Join(dir, "access.log")
	global := fmt.Sprintf("log {\n\t\toutput file %s\n\t\tformat json\n\t}", caddyLog)
	up := newUpstream(t)
	sources := func(logBlock string) string {
		return fmt.Sprintf(`
	%s
	webhook_ingress /hooks/gitlab gitlab {
		verify gitlab %s
		forward_to %s/in/gitlab
	}
	webhook_ingress /hooks/meta meta {
		verify meta app-secret {
			verify_token %s
		}
		forward_to %s/in/meta
	}`, logBlock, token, up.URL, verifyToken, up.URL)
	}
	warnings := func() []string {
		raw, _ := os.ReadFile(caddyLog)
		var out []string
		for _, l := range strings.Split(string(raw), "\n") {
			if strings.Contains(l, "access log records a webhook secret") {
				out = append(out, l)
			}
		}
		return out
	}

	// an access log without the filter
	startCaddyWith(t, up, global, "", sources(fmt.Sprintf("log {\n\t\toutput file %s\n\t}", accessLog)))
	w := warnings()
	if len(w) != 2 || !strings.Contains(strings.Join(w, ""), "request>headers>X-Gitlab-Token") ||
		!strings.Contains(strings.Join(w, ""), "request>uri query hub.verify_token") {
		t.Fatalf("warnings without the filter: %q, want one for gitlab and one for meta", w)
	}

	// the README's filter (its block, as written there)
	block := readmeLogBlock(t)
	startCaddyWith(t, up, global, "", sources(strings.Replace(block, "log {", fmt.Sprintf("log {\n\t\toutput file %s", accessLog), 1)))
	if n := len(warnings()); n != 2 {
		t.Fatalf("with the README's filter: %d warnings in all, want the 2 of the first load only: %q", n, warnings())
	}
	if resp, m := post(t, "/hooks/gitlab", []byte(`{"object_kind":"push"}`), map[string]string{"X-Gitlab-Token": token, "X-Gitlab-Event": "Push Hook"}); resp.StatusCode != 202 {
		t.Fatalf("gitlab: %d %v", resp.StatusCode, m)
	}
	resp, err := http.Get(fmt.Sprintf("http://localhost:%d/hooks/meta?hub.mode=subscribe&hub.verify_token=%s&hub.challenge=1158201444", httpPort, verifyToken))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("meta handshake: %d", resp.StatusCode)
	}
	waitFor(t, func() bool {
		raw, _ := os.ReadFile(accessLog)
		return strings.Count(string(raw), "\n") >= 2
	})
	raw, _ := os.ReadFile(accessLog)
	if strings.Contains(string(raw), token) || strings.Contains(string(raw), verifyToken) {
		t.Fatalf("the access log holds a secret:\n%s", raw)
	}
}

// readmeLogBlock is the README's access log filter, the first caddyfile
// block under "### Logs".
func readmeLogBlock(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	i := strings.Index(text, "\n### Logs\n")
	if i < 0 {
		t.Fatal("README.md has no ### Logs")
	}
	text = text[i:]
	start := strings.Index(text, "```caddyfile\n")
	end := strings.Index(text[start+13:], "```")
	if start < 0 || end < 0 {
		t.Fatal("README.md: no caddyfile block under ### Logs")
	}
	return text[start+13 : start+13+end]
}
