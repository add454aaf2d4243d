package hookline_test

// These tests see hookline as a user's build does: this file imports what
// xcaddy's generated main imports (Caddy's command, its standard modules and
// the module root) and nothing else of hookline, so a module the root stops
// importing is missing here as it would be for every user.

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"

	_ "github.com/caddyserver/caddy/v2/cmd"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/hookline/hookline"
)

// testOnlyModules are registered only by test and measuring builds (the
// fault-injecting store, the no-store instrument): the docs may name them,
// and a user's build must not have them.
var testOnlyModules = []string{"webhooks.storage.faultstore", "webhooks.storage.ceiling"}

// moduleIDPattern finds hookline module IDs in prose and tables.
var moduleIDPattern = regexp.MustCompile(`\b(?:webhooks\.(?:storage|verifiers)\.[a-z0-9_]+|http\.handlers\.webhook_[a-z0-9_]+|admin\.api\.webhooks)\b`)

// hooklineModules is every module of a user's build that hookline owns.
func hooklineModules() []string {
	var ids []string
	for _, id := range caddy.Modules() {
		if id == "webhooks" || strings.HasPrefix(id, "webhooks.") ||
			strings.HasPrefix(id, "http.handlers.webhook_") || id == "admin.api.webhooks" {
			ids = append(ids, id)
		}
	}
	return ids
}

// referenceModules reads the module table of docs/reference.md: the first
// column of every row under "## Modules", an ID in backticks.
func referenceModules(t *testing.T) []string {
	t.Helper()
	section := markdownSection(t, "docs/reference.md", "Modules")
	row := regexp.MustCompile("(?m)^\\|\\s*`([a-z0-9_.]+)`\\s*\\|")
	var ids []string
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		ids = append(ids, m[1])
	}
	if len(ids) == 0 {
		t.Fatal("docs/reference.md: no module rows under ## Modules")
	}
	return ids
}

// markdownSection returns the text under the H2 heading of that name, up
// to the next H2.
func markdownSection(t *testing.T, path, heading string) string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	start := strings.Index(text, "\n## "+heading+"\n")
	if start < 0 {
		t.Fatalf("%s: no section %q", path, "## "+heading)
	}
	text = text[start+len(heading)+5:]
	if end := strings.Index(text, "\n## "); end >= 0 {
		text = text[:end]
	}
	return text
}

// docFiles is every Markdown file a user reads: README.md, CHANGELOG.md
// and those under docs/ and examples/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "CHANGELOG.md"}
	for _, dir := range []string{"docs", "examples"} {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// TestModulesRegistered: the module table of docs/reference.md is exactly
// the hookline modules a user's build registers, every module ID named
// anywhere in the docs is registered, and the test-only modules are not.
func TestModulesRegistered(t *testing.T) {
	registered := hooklineModules()
	documented := referenceModules(t)
	for _, id := range documented {
		if !slices.Contains(registered, id) {
			t.Errorf("docs/reference.md lists %s, which a user's build does not register", id)
		}
	}
	for _, id := range registered {
		if !slices.Contains(documented, id) {
			t.Errorf("a user's build registers %s, which docs/reference.md's module table does not list", id)
		}
	}
	for _, id := range testOnlyModules {
		if slices.Contains(registered, id) {
			t.Errorf("%s is for tests and measuring builds only, yet a user's build registers it", id)
		}
	}
	for _, path := range docFiles(t) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range moduleIDPattern.FindAllString(string(src), -1) {
			if !slices.Contains(registered, id) && !slices.Contains(testOnlyModules, id) {
				t.Errorf("%s names %s, which a user's build does not register", path, id)
			}
		}
	}
	// the class of bug this guards against: the dashboard was documented
	// while no build had it
	for _, id := range []string{"webhooks", "http.handlers.webhook_ingress", "http.handlers.webhook_dashboard", "admin.api.webhooks", "webhooks.storage.embedded", "webhooks.storage.redis"} {
		if !slices.Contains(registered, id) {
			t.Errorf("a user's build lacks %s", id)
		}
	}
}

// caddyfileBlock is one ```caddyfile fenced block of a document.
type caddyfileBlock struct {
	file string
	line int
	text string
}

var fence = regexp.MustCompile("(?m)^```caddyfile[ \t]*\n((?s:.*?))^```[ \t]*$")

func caddyfileBlocks(t *testing.T, path string) []caddyfileBlock {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []caddyfileBlock
	for _, m := range fence.FindAllStringSubmatchIndex(string(src), -1) {
		blocks = append(blocks, caddyfileBlock{
			file: path,
			line: strings.Count(string(src[:m[0]]), "\n") + 1,
			text: string(src[m[2]:m[3]]),
		})
	}
	return blocks
}

// syntaxPlaceholder is a <placeholder> of a syntax summary, outside a
// comment: such a block shows a shape, not a configuration.
var syntaxPlaceholder = regexp.MustCompile(`<[A-Za-z_][A-Za-z0-9_ .|-]*>`)

func isSyntaxSummary(text string) bool {
	for _, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, "#"); i >= 0 && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t') {
			line = line[:i]
		}
		if syntaxPlaceholder.MatchString(line) {
			return true
		}
	}
	return false
}

// isWholeConfig: a block that starts with the global options block or a
// site address is a Caddyfile of its own; anything else is a fragment.
func isWholeConfig(text string) bool {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if line == "{" {
			return true
		}
		first := strings.Fields(line)[0]
		return strings.ContainsAny(first, ".:") || strings.HasPrefix(first, "localhost")
	}
	return false
}

// adaptCaddyfile adapts a whole Caddyfile; a fragment is tried inside a
// site block, then inside the global options block.
func adaptCaddyfile(text string) error {
	adapt := func(src string) error {
		_, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(src), map[string]any{"filename": "Caddyfile"})
		if err != nil {
			return err
		}
		for _, w := range warnings {
			if !strings.Contains(w.Message, "not formatted") {
				return &adaptWarning{w}
			}
		}
		return nil
	}
	if isWholeConfig(text) {
		return adapt(text)
	}
	errSite := adapt("example.com {\n" + text + "\n}\n")
	if errSite == nil {
		return nil
	}
	if adapt("{\n"+text+"\n}\n") == nil {
		return nil
	}
	return errSite
}

type adaptWarning struct{ w caddyconfig.Warning }

func (a *adaptWarning) Error() string { return "warning: " + a.w.String() }

// TestDocumentedCaddyfilesAdapt adapts every Caddyfile a user may copy:
// each ```caddyfile block of the README, docs/ and examples/, the example
// Caddyfiles and Caddyfile.example, with only a user's build's modules. A
// fragment is wrapped in a site (or the global options); a syntax summary
// with <placeholders> is skipped.
func TestDocumentedCaddyfilesAdapt(t *testing.T) {
	var blocks []caddyfileBlock
	for _, path := range docFiles(t) {
		blocks = append(blocks, caddyfileBlocks(t, path)...)
	}
	wholes, err := filepath.Glob("examples/*/Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range append(wholes, "Caddyfile.example") {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, caddyfileBlock{file: path, line: 1, text: string(src)})
	}
	adapted, skipped := 0, 0
	for _, b := range blocks {
		if isSyntaxSummary(b.text) {
			skipped++
			continue
		}
		adapted++
		if err := adaptCaddyfile(b.text); err != nil {
			t.Errorf("%s:%d: does not adapt: %v\n%s", b.file, b.line, err, b.text)
		}
	}
	t.Logf("%d Caddyfiles adapted, %d syntax summaries skipped", adapted, skipped)
	if adapted < 20 {
		t.Errorf("only %d Caddyfiles adapted: the block extraction is broken", adapted)
	}
}

// TestHelpers keeps the classification of blocks honest.
func TestCaddyfileBlockClassification(t *testing.T) {
	for _, tc := range []struct {
		text           string
		whole, summary bool
	}{
		{text: "{\n\twebhooks\n}", whole: true},
		{text: "# a comment\nexample.com {\n\trespond 200\n}", whole: true},
		{text: "http://localhost:8080 {\n}", whole: true},
		{text: ":8080 {\n}", whole: true},
		{text: "log {\n\tformat filter\n}"},
		{text: "webhook_ingress /hooks/x x {\n\tverify none\n}"},
		{text: "webhook_ingress [<matcher>] <source> {\n}", summary: true},
		{text: "verify hmac {env.S} # X-Signature: <hex HMAC>\n"},
		{text: "storage embedded [<path>]", summary: true},
	} {
		if got := isWholeConfig(tc.text); got != tc.whole {
			t.Errorf("isWholeConfig(%q) = %v, want %v", tc.text, got, tc.whole)
		}
		if got := isSyntaxSummary(tc.text); got != tc.summary {
			t.Errorf("isSyntaxSummary(%q) = %v, want %v", tc.text, got, tc.summary)
		}
	}
	if err := adaptCaddyfile("webhook_ingress /hooks/x x {\n\tverify none\n\tforward_to http://127.0.0.1:9\n}"); err != nil {
		t.Errorf("a valid fragment: %v", err)
	}
	if err := adaptCaddyfile("webhook_ingress /hooks/x x {\n\tverify none\n\tno_such_option\n}"); err == nil {
		t.Error("an invalid fragment adapted")
	}
	if err := adaptCaddyfile("webhooks {\n\tworkers 4\n}"); err != nil {
		t.Errorf("a global options fragment: %v", err)
	}
}

// TestNoOutsideReferences: the project is its own contract. No file of it
// cites a document outside the repository (the team's working notes beside
// it): a contributor reading the citation would find nothing.
func TestNoOutsideReferences(t *testing.T) {
	outside := []string{"DESIGN" + ".md", "SIGNATURES" + ".md", "CADDY" + ".md", "../" + "shared"}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// git's and the SDK cross-check's installed npm packages
			// (testdata/sdkcheck/node_modules) are not the project's files
			if d.Name() == ".git" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, name := range outside {
			if i := strings.Index(string(src), name); i >= 0 {
				line := strings.Count(string(src[:i]), "\n") + 1
				t.Errorf("%s:%d refers to %s, which is not part of the project: cite the project's own docs", path, line, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestJSONFieldsDocumented: every JSON field of every hookline module's
// config (the module structs and the hookline types they hold, walked by
// reflection) is named in docs/reference.md, so the JSON reference cannot
// fall behind the code.
func TestJSONFieldsDocumented(t *testing.T) {
	src, err := os.ReadFile("docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	ref := string(src)
	seen := map[reflect.Type]bool{}
	var walk func(path string, typ reflect.Type)
	walk = func(path string, typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] || !strings.HasPrefix(typ.PkgPath(), "github.com/hookline/hookline") {
			return
		}
		seen[typ] = true
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if f.Anonymous && name == "" {
				walk(path, f.Type)
				continue
			}
			if name == "" {
				name = f.Name
			}
			if !strings.Contains(ref, "`"+name+"`") && !strings.Contains(ref, `"`+name+`"`) {
				t.Errorf("docs/reference.md does not name the JSON field %s.%s (%s.%s)", path, name, typ.Name(), f.Name)
			}
			walk(path+"."+name, f.Type)
		}
	}
	modules := 0
	for _, id := range hooklineModules() {
		info, err := caddy.GetModule(id)
		if err != nil {
			t.Fatal(err)
		}
		walk(id, reflect.TypeOf(info.New()))
		modules++
	}
	if modules < 8 || len(seen) < 10 {
		t.Fatalf("walked %d modules and %d types: the walk is broken", modules, len(seen))
	}
}
