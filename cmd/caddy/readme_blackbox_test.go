package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/hookline/hookline/internal/testing/browser"
)

// These tests start where a user starts: the README. They run its "Try it"
// block against what ./scripts/run starts, and its dashboard block as
// written, behind basic_auth, in the built binary.

// readme returns README.md of the repository.
func readme(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// fencedBlock returns the first fenced block of the given language under
// the H2 or H3 heading of that name.
func fencedBlock(t *testing.T, doc, heading, lang string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^#{2,3} ` + regexp.QuoteMeta(heading) + "\n(?s:.*?)^```" + lang + "\n((?s:.*?))^```$")
	m := re.FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("README.md: no ```%s block under %q", lang, heading)
	}
	return m[1]
}

// shellStep is one command of a documented shell session and the answer
// the document shows under it.
type shellStep struct {
	command string
	want    []string
}

// shellSteps splits a block into commands (a line and its "\"
// continuations) and the "# " lines under each, which are its answer.
func shellSteps(block string) []shellStep {
	var steps []shellStep
	lines := strings.Split(strings.TrimRight(block, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(line, "# ") {
			if len(steps) > 0 {
				steps[len(steps)-1].want = append(steps[len(steps)-1].want, strings.TrimPrefix(line, "# "))
			}
			continue
		}
		cmd := line
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			line = lines[i]
			cmd += "\n" + line
		}
		steps = append(steps, shellStep{command: cmd})
	}
	return steps
}

// matchAnswer reports whether got (the command's output lines) is what the
// document shows: line by line, where "..." inside a line stands for any
// text and a line that is only "..." for any number of lines.
func matchAnswer(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for skip := 0; skip <= len(got); skip++ {
			if matchAnswer(want[1:], got[skip:]) {
				return true
			}
		}
		return false
	}
	if len(got) == 0 {
		return false
	}
	parts := strings.Split(want[0], "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	if !regexp.MustCompile(`^` + strings.Join(parts, ".*") + `$`).MatchString(got[0]) {
		return false
	}
	return matchAnswer(want[1:], got[1:])
}

func TestMatchAnswer(t *testing.T) {
	for _, tc := range []struct {
		want, got []string
		ok        bool
	}{
		{want: []string{"HTTP/1.1 202 Accepted", "...", `{"a":1}`}, got: []string{"HTTP/1.1 202 Accepted", "Date: x", "", `{"a":1}`}, ok: true},
		{want: []string{"HTTP/1.1 202 Accepted", "...", `{"a":1}`}, got: []string{"HTTP/1.1 200 OK", "", `{"a":1}`}},
		{want: []string{`{"id":"...","s":"delivered"}`}, got: []string{`{"id":"x1","s":"delivered"}`}, ok: true},
		{want: []string{`{"id":"...","s":"delivered"}`}, got: []string{`{"id":"x1","s":"queued"}`}},
		{want: []string{"a"}, got: []string{"a", "b"}},
		{want: nil, got: nil, ok: true},
	} {
		if got := matchAnswer(tc.want, tc.got); got != tc.ok {
			t.Errorf("matchAnswer(%q, %q) = %v, want %v", tc.want, tc.got, got, tc.ok)
		}
	}
	steps := shellSteps("a=1\ncurl x \\\n  -d y   # note\n# HTTP/1.1 200 OK\n# ...\ncurl z\n# {}\n")
	if len(steps) != 3 || steps[1].command != "curl x \\\n  -d y   # note" || len(steps[1].want) != 2 || steps[2].want[0] != "{}" {
		t.Errorf("shellSteps: %+v", steps)
	}
}

// portsFree fails (in CI) or skips the test when a fixed port the README
// uses is taken: the README's commands name them, so the test cannot move.
func portsFree(t *testing.T, ports ...int) {
	t.Helper()
	for _, p := range ports {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("port %d, which the README's example uses, is taken: %v", p, err)
			}
			t.Skipf("port %d, which the README's example uses, is taken (is ./scripts/run running?): %v", p, err)
		}
		l.Close()
	}
}

// TestReadmeTryIt starts ./scripts/run as the README says (its demo
// secrets, Caddyfile.example, the embedded store in a fresh data dir) and
// runs the README's "Try it" block command by command with bash, checking
// each answer against the one the README shows. A resend or a lookup may
// be repeated for a few seconds until its answer shows (the delivery takes
// milliseconds, the answer "delivered" may come one resend later).
func TestReadmeTryIt(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is required by the README's example (scripts/test installs it): %v", tool, err)
		}
	}
	portsFree(t, 8080, 9000, 2019)
	caddyBinary(t) // the same build as go run's: its packages are cached, go run only links
	block := fencedBlock(t, readme(t), "Try it", "sh")
	steps := shellSteps(block)
	if len(steps) < 4 {
		t.Fatalf("README's Try it block has %d commands", len(steps))
	}

	// Caddy's data and config dirs in a fresh place (the embedded store is
	// under the data dir); HOME stays, so that go run finds the module and
	// build caches this test run already filled
	dirs := t.TempDir()
	run := exec.Command("./scripts/run")
	run.Dir = filepath.Join("..", "..")
	run.Env = append(withoutEnv(os.Environ(), "HOOKLINE_GENERIC_SECRET", "GITHUB_WEBHOOK_SECRET", "XDG_DATA_HOME", "XDG_CONFIG_HOME"),
		"XDG_DATA_HOME="+filepath.Join(dirs, "data"), "XDG_CONFIG_HOME="+filepath.Join(dirs, "config"))
	run.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var logs bytes.Buffer
	run.Stdout, run.Stderr = &logs, &logs
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { run.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-run.Process.Pid, syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-run.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("scripts/run output:\n%s", logs.String())
		}
	})
	// go run compiles first: minutes on a cold cache
	deadline := time.Now().Add(6 * time.Minute)
	for {
		resp, err := http.Get("http://localhost:2019/config/")
		if err == nil {
			resp.Body.Close()
			if c, err := net.Dial("tcp", "localhost:8080"); err == nil {
				c.Close()
				break
			}
		}
		select {
		case <-exited:
			t.Fatalf("scripts/run exited:\n%s", logs.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("scripts/run did not answer within 6 minutes")
		}
	}

	var state []string // the commands that set variables, run again before each one
	for i, step := range steps {
		script := strings.Join(append(append([]string{"set -e"}, state...), step.command), "\n")
		if len(step.want) == 0 {
			if out, err := exec.Command("bash", "-c", script).CombinedOutput(); err != nil {
				t.Fatalf("step %d %q: %v\n%s", i+1, step.command, err, out)
			}
			state = append(state, step.command)
			continue
		}
		repeatable := !strings.Contains(step.command, " -d ") || seenBefore(steps[:i], step.command)
		retryUntil := time.Now().Add(10 * time.Second)
		for {
			out, err := exec.Command("bash", "-c", script).Output()
			if err != nil {
				t.Fatalf("step %d %q: %v\n%s", i+1, step.command, err, out)
			}
			got := strings.Split(strings.TrimRight(strings.ReplaceAll(string(out), "\r", ""), "\n"), "\n")
			if matchAnswer(step.want, got) {
				break
			}
			if !repeatable || time.Now().After(retryUntil) {
				t.Fatalf("step %d:\n%s\nanswered:\n%s\nthe README shows:\n%s", i+1, step.command, strings.Join(got, "\n"), strings.Join(step.want, "\n"))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func seenBefore(steps []shellStep, command string) bool {
	first := strings.SplitN(command, "#", 2)[0]
	for _, s := range steps {
		if strings.TrimSpace(strings.SplitN(s.command, "#", 2)[0]) == strings.TrimSpace(first) {
			return true
		}
	}
	return false
}

func withoutEnv(env []string, names ...string) []string {
	var out []string
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// TestReadmeDashboard mounts the README's dashboard block as written (its
// site address and its placeholder hash aside) in the built binary: without
// the password the page and its API answer 401; with it the page loads,
// its API answers, and a headless browser renders live data (the source's
// row in the health table, the event in the browser).
func TestReadmeDashboard(t *testing.T) {
	block := fencedBlock(t, readme(t), "Dashboard", "caddyfile")
	const user, password = "ops", "correct horse battery staple"
	bin := caddyBinary(t)
	hashOut, err := exec.Command(bin, "hash-password", "--plaintext", password).Output()
	if err != nil {
		t.Fatalf("caddy hash-password: %v", err)
	}
	hash := strings.TrimSpace(string(hashOut))
	if !strings.Contains(block, "example.com {") || !strings.Contains(block, "$2a$14$...") || !strings.Contains(block, "\t\t\t"+user+" ") {
		t.Fatalf("the README's dashboard block changed shape; adjust this test:\n%s", block)
	}

	dir := t.TempDir()
	adminP, httpP := freePort(t), freePort(t)
	site := strings.Replace(block, "example.com {", fmt.Sprintf(`http://127.0.0.1:%d {
	webhook_ingress /hooks/t t {
		verify none
		forward_to http://127.0.0.1:%d/in
		id_from header Idempotency-Key
	}`, httpP, httpP), 1)
	site = strings.Replace(site, "$2a$14$...", hash, 1)
	cfg := fmt.Sprintf(`{
	admin 127.0.0.1:%d
	skip_install_trust
	webhooks {
		storage embedded %s
	}
}
%s
`, adminP, filepath.Join(dir, "events.db"), site)
	// the upstream is a route of the same site, so it needs no process of its own
	cfg = strings.Replace(cfg, "\thandle_path /hookline/* {", "\thandle /in {\n\t\trespond 204\n\t}\n\thandle_path /hookline/* {", 1)
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, dir, path, adminP, httpP)

	base := fmt.Sprintf("http://127.0.0.1:%d", httpP)
	req, _ := http.NewRequest("POST", base+"/hooks/t", strings.NewReader(`{"readme":1}`))
	req.Header.Set("Idempotency-Key", "readme-dash-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("posting an event: %d\n%s", resp.StatusCode, n.logs.String())
	}

	get := func(path string, auth bool, header string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		if auth {
			req.SetBasicAuth(user, password)
		}
		if header != "" {
			req.Header.Set("X-Hookline-Dashboard", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, p := range []string{"/hookline/", "/hookline/api/stats"} {
		if code, _ := get(p, false, ""); code != http.StatusUnauthorized {
			t.Errorf("GET %s without the password: %d, want 401", p, code)
		}
	}
	if code, body := get("/hookline/", true, ""); code != http.StatusOK || !strings.Contains(body, "<html") {
		t.Fatalf("GET /hookline/ with the password: %d %.200q", code, body)
	}
	var stats struct {
		Sources map[string]json.RawMessage `json:"sources"`
	}
	waitUntil(t, 10*time.Second, func() bool {
		code, body := get("/hookline/api/events/t/readme-dash-1", true, "")
		return code == http.StatusOK && strings.Contains(body, `"status":"delivered"`)
	})
	// the counters reach the stats within their flush interval (2 s)
	waitUntil(t, 10*time.Second, func() bool {
		code, body := get("/hookline/api/stats", true, "")
		return code == http.StatusOK && json.Unmarshal([]byte(body), &stats) == nil && stats.Sources["t"] != nil
	})

	ctx, report := browser.Page(t)
	authz := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": authz}}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/hookline/"),
		chromedp.WaitVisible(chromedp.CSS(`#health-rows tr[data-source="t"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#evs-rows tr[data-event="readme-dash-1"]`)),
	); err != nil {
		t.Fatalf("the browser did not render the live data: %v", err)
	}
	row, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#evs-rows tr[data-event="readme-dash-1"]`)))
	if err != nil || !strings.Contains(row, "delivered") {
		t.Errorf("the event's row: %q (%v), want it delivered", row, err)
	}
	if exceptions, dialogs := report(); len(exceptions) > 0 || len(dialogs) > 0 {
		t.Errorf("browser errors %q, dialogs %q", exceptions, dialogs)
	}
}

// waitUntil polls cond until it holds or the timeout passes.
func waitUntil(t *testing.T, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestUserBuildListsDocumentedModules builds Caddy as a user's xcaddy does
// (a fresh main module requiring stock Caddy and hookline, replaced by
// this checkout, importing caddycmd, the standard modules and the module
// root) and checks that its `caddy list-modules` lists every module of
// docs/reference.md's table, and no hookline module the table lacks.
func TestUserBuildListsDocumentedModules(t *testing.T) {
	caddyBinary(t) // warms the build cache with the same packages
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"main.go": `package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/hookline/hookline"
)

func main() { caddycmd.Main() }
`,
	}
	// the Go and Caddy versions of this checkout's go.mod
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	caddyVersion := regexp.MustCompile(`(?m)^\s*github.com/caddyserver/caddy/v2 (\S+)$`).FindSubmatch(mod)
	if goVersion == nil || caddyVersion == nil {
		t.Fatalf("go.mod: no go or caddy version")
	}
	files["go.mod"] = fmt.Sprintf(`module caddy

go %s

require (
	github.com/caddyserver/caddy/v2 %s
	github.com/hookline/hookline v0.0.0-00010101000000-000000000000
)

replace github.com/hookline/hookline => %s
`, goVersion[1], caddyVersion[1], root)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files["go.sum"] = string(sum)
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-o", "caddy", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building a user's Caddy: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(dir, "caddy"), "list-modules").Output()
	if err != nil {
		t.Fatalf("caddy list-modules: %v", err)
	}
	listed := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		listed[strings.TrimSpace(l)] = true
	}
	ref, err := os.ReadFile(filepath.Join(root, "docs", "reference.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(ref)[strings.Index(string(ref), "\n## Modules\n"):]
	section = section[:strings.Index(section[1:], "\n## ")+1]
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\|\\s*`([a-z0-9_.]+)`\\s*\\|").FindAllStringSubmatch(section, -1) {
		documented[m[1]] = true
		if !listed[m[1]] {
			t.Errorf("a user's build does not list %s (docs/reference.md names it)", m[1])
		}
	}
	if len(documented) < 10 {
		t.Fatalf("docs/reference.md's module table: %d rows", len(documented))
	}
	for id := range listed {
		if (id == "webhooks" || strings.HasPrefix(id, "webhooks.") || strings.HasPrefix(id, "http.handlers.webhook_") || id == "admin.api.webhooks") && !documented[id] {
			t.Errorf("a user's build lists %s, which docs/reference.md's table lacks", id)
		}
	}
}
