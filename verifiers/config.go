package verifiers

import (
	"errors"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// This file holds the JSON configuration the schemes share, one type per
// concept (the secrets, the replay window, both together), each with its
// Caddyfile parsing and its compilation: Provision turns it into the
// Caddy-free runtime values Verify reads (keys as [][]byte, the tolerance
// as a time.Duration).

// SecretsConfig is the configuration of a scheme keyed with shared
// secrets. A scheme embeds it; its secrets are the words after the scheme
// name in the Caddyfile and the arguments of `secret` lines in its block
// (see parseSecretsBlock).
type SecretsConfig struct {
	// Secrets are the shared secrets (signing secrets, tokens or app
	// secrets, as the scheme says); several mean rotation: any one may
	// match. Placeholders such as {env.NAME} and {file./path} are resolved
	// when the module is provisioned; secrets that resolve to nothing are
	// ignored, but at least one must remain.
	Secrets []string `json:"secrets,omitempty"`

	// positions are the place in Secrets of each key resolve returned
	positions keyPositions
}

// resolve compiles the secrets into the keys Verify uses (see
// ResolveSecrets), noting where each key is configured (keyPosition).
func (c *SecretsConfig) resolve() ([][]byte, error) {
	keys, positions, err := resolvePositions(c.Secrets)
	c.positions = positions
	return keys, err
}

// keyPosition is the place among the configured secrets of the key at k
// among those resolve returned: a secret whose placeholder resolved to
// nothing keeps its place, so the positions an operator reads (secret 2
// of 3) do not move when an optional {env.OLD_SECRET} is left unset.
func (c *SecretsConfig) keyPosition(k int) int { return c.positions.of(k) }

// keyPositions are the places in a configured list of the keys resolved
// from it (resolvePositions): a scheme maps the index of the key that
// matched through it.
type keyPositions []int

// of is the configured place of the key at k (k itself when unknown).
func (p keyPositions) of(k int) int {
	if k >= 0 && k < len(p) {
		return p[k]
	}
	return k
}

// secretNumber is how an error names the key at k among those resolve
// returned: its place among the configured secrets, from 1, as the stats
// and the metrics number it.
func (c *SecretsConfig) secretNumber(k int) int { return c.keyPosition(k) + 1 }

// KeyCount is how many secrets are configured, those left unset included
// (KeyVerifier).
func (c *SecretsConfig) KeyCount() int { return len(c.Secrets) }

// ToleranceConfig is the replay window of a scheme that signs a timestamp.
// A scheme embeds it; its Caddyfile form is a `tolerance <duration>` line
// in the scheme's block.
type ToleranceConfig struct {
	// Tolerance is how far the signed timestamp may be from the current
	// time, in either direction (a difference exactly equal to it is
	// accepted): a duration string such as "5m", or integer nanoseconds.
	// It must not be negative; its default is the scheme's.
	Tolerance caddy.Duration `json:"tolerance,omitempty"`
}

// DefaultTolerance is the tolerance of stripe, slack, standard and of hmac
// with a timestamp_header, when none is configured.
const DefaultTolerance = 5 * time.Minute

// errNegativeTolerance refuses a negative tolerance when provisioning.
var errNegativeTolerance = errors.New("tolerance must not be negative")

// compile refuses a negative tolerance, fills in def when none is set (0:
// none stays none; the provisioned module's JSON shows the tolerance in
// effect, as before) and returns the tolerance Verify uses.
func (c *ToleranceConfig) compile(def time.Duration) (time.Duration, error) {
	if c.Tolerance < 0 {
		return 0, errNegativeTolerance
	}
	if c.Tolerance == 0 {
		c.Tolerance = caddy.Duration(def)
	}
	return time.Duration(c.Tolerance), nil
}

// option is the blockOption that reads a `tolerance <duration>` line.
func (c *ToleranceConfig) option() blockOption {
	return func(d *caddyfile.Dispenser, name string) (bool, error) {
		if name != "tolerance" {
			return false, nil
		}
		return true, c.parse(d)
	}
}

// parse reads the single duration argument of a `tolerance` line; it
// must not be negative.
func (c *ToleranceConfig) parse(d *caddyfile.Dispenser) error {
	var s string
	if err := oneArg(d, &s); err != nil {
		return err
	}
	dur, err := caddy.ParseDuration(s)
	if err != nil {
		return d.Errf("bad tolerance %q: %v", s, err)
	}
	if dur < 0 {
		return d.Err("tolerance must not be negative")
	}
	c.Tolerance = caddy.Duration(dur)
	return nil
}

// TimestampedConfig is the configuration of the HMAC schemes that sign a
// timestamp (stripe, slack, paddle, standard): their secrets and their
// replay window.
type TimestampedConfig struct {
	SecretsConfig
	ToleranceConfig
}

// compile resolves the secrets and the tolerance (def when none is set):
// the keys and the tolerance Verify uses.
func (c *TimestampedConfig) compile(def time.Duration) ([][]byte, time.Duration, error) {
	tol, err := c.ToleranceConfig.compile(def)
	if err != nil {
		return nil, 0, err
	}
	keys, err := c.resolve()
	return keys, tol, err
}

// parseCaddyfile reads the Caddyfile syntax every timestamped scheme
// shares (the first token is the scheme name):
//
//	<scheme> [<secret>...] {
//		secret    <secret>...
//		tolerance <duration>
//	}
func (c *TimestampedConfig) parseCaddyfile(d *caddyfile.Dispenser) error {
	return parseSecretsBlock(d, &c.Secrets, c.option())
}
