package ingress

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// compileSchema reads and compiles the JSON Schema file of a source's
// schema option (placeholders resolved). A schema without "$schema" is
// read as draft 2020-12; "format" is an annotation, as that draft says.
// Only local files are loaded ($ref to other files beside it included):
// nothing is fetched over the network.
func compileSchema(path string) (*jsonschema.Schema, error) {
	path, err := caddy.NewReplacer().ReplaceOrErr(path, true, true)
	if err != nil {
		return nil, fmt.Errorf("schema %q: %v", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %v", path, err)
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %v", path, err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, fmt.Errorf("schema %s: not JSON: %v", path, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	loc := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("schema %s: %v", path, err)
	}
	sch, err := c.Compile(loc)
	var invalid *jsonschema.SchemaValidationError
	switch {
	case errors.As(err, &invalid):
		// the metaschema's own words, at the keyword that breaks it
		field, reason := violation(invalid.Err)
		return nil, fmt.Errorf("schema %s: not a valid JSON Schema: at %q: %s", path, field, reason)
	case err != nil:
		return nil, fmt.Errorf("schema %s: %v", path, err)
	}
	return sch, nil
}

// schemaPrinter writes the violations' reasons.
var schemaPrinter = message.NewPrinter(language.English)

// violation is the first violation of a validation error: the JSON
// pointer (RFC 6901) of the field and why. A missing required property is
// named by its own pointer, with the reason "required".
func violation(err error) (field, reason string) {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "", "invalid"
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	field = jsonPointer(ve.InstanceLocation)
	if req, ok := ve.ErrorKind.(*kind.Required); ok && len(req.Missing) > 0 {
		return field + "/" + escapePointer(req.Missing[0]), "required"
	}
	return field, ve.ErrorKind.LocalizedString(schemaPrinter)
}

// jsonPointer joins a location's tokens into a JSON pointer ("" is the
// whole document).
func jsonPointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapePointer(t))
	}
	return b.String()
}

// escapePointer escapes one reference token of a JSON pointer.
func escapePointer(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}
