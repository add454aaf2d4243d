package verifiers

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/caddyserver/caddy/v2"
)

// This file holds how configured secrets become keys: placeholders
// resolved at provision time, never logged or returned in an error.

// ResolveSecrets replaces placeholders such as {env.NAME} and {file./path}
// in each configured secret (caddy.NewReplacer, unknown placeholders become
// empty) and returns the non-empty results as keys, in order. Secrets that
// resolve to nothing are dropped, so an optional {env.OLD_SECRET} may be
// left unset. It fails when no secret is left. The error never contains a
// secret. A literal brace in a secret is written \{ or \}.
func ResolveSecrets(secrets []string) ([][]byte, error) {
	keys, _, err := resolvePositions(secrets)
	return keys, err
}

// resolvePositions is ResolveSecrets that also returns, for each key, its
// place in secrets.
func resolvePositions(secrets []string) ([][]byte, keyPositions, error) {
	repl := caddy.NewReplacer()
	keys := make([][]byte, 0, len(secrets))
	positions := make(keyPositions, 0, len(secrets))
	for i, s := range secrets {
		v := repl.ReplaceAll(s, "")
		if v == "" {
			continue
		}
		keys = append(keys, []byte(v))
		positions = append(positions, i)
	}
	if len(keys) == 0 {
		if len(secrets) == 0 {
			return nil, nil, errors.New("no secret configured")
		}
		return nil, nil, fmt.Errorf("none of the %d configured secrets is non-empty after placeholder resolution", len(secrets))
	}
	return keys, positions, nil
}

// resolveSetting replaces placeholders such as {env.NAME} and {file./path}
// in the value s of the option name, unknown ones becoming empty, like
// ResolveSecrets does for a single value. A value that resolves to nothing
// is an error naming the option, never the value.
func resolveSetting(name, s string) (string, error) {
	v := caddy.NewReplacer().ReplaceAll(s, "")
	if v == "" {
		return "", fmt.Errorf("%s is empty after placeholder resolution", name)
	}
	return v, nil
}

// decodeWhsec decodes the base64 of a whsec_ secret as the Python
// reference library does (it appends "==" and decodes without validation):
// padded, partly padded or not, and with non-zero bits in the last
// character, which only a secret whose length is not a multiple of three
// has (the official test secret MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS is one,
// and Caddy refusing to start on it while the SDK accepts it helps no
// one). What Python would accept only by silently dropping characters (a
// line break, the URL alphabet, anything else outside standard base64)
// gives another key than the one meant, so every signature would fail:
// that is refused at provision instead, as is an impossible length.
func decodeWhsec(s string) ([]byte, bool) {
	data := strings.TrimRight(s, "=")
	if len(s)-len(data) > 2 || len(data)%4 == 1 {
		return nil, false
	}
	for i := 0; i < len(data); i++ {
		c := data[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/') {
			return nil, false
		}
	}
	b, err := base64.RawStdEncoding.DecodeString(data) // not Strict: trailing bits are dropped, as Python does
	if err != nil {
		return nil, false
	}
	return b, true
}
