package verifiers

import (
	"encoding/base64"
	"errors"
	"fmt"

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
	repl := caddy.NewReplacer()
	keys := make([][]byte, 0, len(secrets))
	for _, s := range secrets {
		v := repl.ReplaceAll(s, "")
		if v == "" {
			continue
		}
		keys = append(keys, []byte(v))
	}
	if len(keys) == 0 {
		if len(secrets) == 0 {
			return nil, errors.New("no secret configured")
		}
		return nil, fmt.Errorf("none of the %d configured secrets is non-empty after placeholder resolution", len(secrets))
	}
	return keys, nil
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

// decodeWhsec decodes the base64 of a whsec_ secret, padded or not: the
// Python reference library appends "==" before decoding, so it accepts
// both, while the Go one (StdEncoding) refuses unpadded secrets. Either
// spelling must be canonical (no line breaks, no non-zero padding bits, no
// URL alphabet), so a truncated or mistyped secret still fails
// provisioning instead of silently giving another key.
func decodeWhsec(s string) ([]byte, bool) {
	if b, ok := decodeCanonicalBase64(s); ok {
		return b, true
	}
	b, err := base64.RawStdEncoding.Strict().DecodeString(s)
	if err != nil || base64.RawStdEncoding.EncodeToString(b) != s {
		return nil, false
	}
	return b, true
}
