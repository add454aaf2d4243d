// Package recipes reads the provider recipes of docs/providers.md: the
// caddyfile block under each <!-- recipe: name --> mark, and the verify
// directive in it. The tests that prove the recipes (the verifiers', the
// ingress's through Caddy, the official Go SDKs' module) read them here.
package recipes

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// mark finds each recipe's caddyfile block.
var mark = regexp.MustCompile("(?s)<!-- recipe: ([a-z0-9_-]+) -->\n```caddyfile\n(.*?)\n```")

// EnvPlaceholder finds the {env.NAME} placeholders of a directive, NAME
// in its first group.
var EnvPlaceholder = regexp.MustCompile(`\{env\.([A-Z0-9_]+)\}`)

// Read returns the caddyfile block of every recipe of the page at path,
// by name. A name marked twice, or a mark not followed by a caddyfile
// block, is an error.
func Read(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, m := range mark.FindAllStringSubmatch(string(raw), -1) {
		if _, dup := out[m[1]]; dup {
			return nil, fmt.Errorf("recipe %s twice", m[1])
		}
		out[m[1]] = m[2]
	}
	if n := strings.Count(string(raw), "\n<!-- recipe: "); n != len(out) {
		return nil, fmt.Errorf("%d recipe marks, %d followed by a caddyfile block", n, len(out))
	}
	return out, nil
}

// VerifyDirective returns the words after `verify` of a recipe block, up
// to the end of its line or its closing brace.
func VerifyDirective(block string) (string, error) {
	lines := strings.Split(block, "\n")
	for i, l := range lines {
		rest, ok := strings.CutPrefix(strings.TrimSpace(l), "verify ")
		if !ok {
			continue
		}
		if !strings.HasSuffix(rest, "{") {
			return rest, nil
		}
		depth := 0
		var out []string
		for _, l := range lines[i:] {
			// placeholders such as {env.X} and {body} open and close on
			// one line
			depth += strings.Count(l, "{") - strings.Count(l, "}")
			out = append(out, l)
			if depth == 0 {
				return strings.TrimPrefix(strings.TrimSpace(strings.Join(out, "\n")), "verify "), nil
			}
		}
		return "", errors.New("unclosed verify block in\n" + block)
	}
	return "", errors.New("no verify line in\n" + block)
}
