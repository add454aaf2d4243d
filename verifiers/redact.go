package verifiers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// redactedValue replaces a secret member's value in what is shown.
const redactedValue = `"[redacted]"`

// RedactJSONMembers returns body with the value of every object member
// named name (exactly, at any depth) replaced by "[redacted]", leaving
// every other byte as it was: the payload an operator reads keeps its
// layout. Names are compared decoded ("client\u0053tate" is clientState).
// A body that is not JSON is returned whole when it does not hold the
// member's name at all, and otherwise as "[redacted]" alone: a secret in a
// body the parser cannot follow is never shown.
func RedactJSONMembers(body []byte, name string) []byte {
	spans, err := memberValueSpans(body, name)
	if err != nil {
		if bytes.Contains(body, []byte(name)) {
			return []byte(redactedValue)
		}
		return body
	}
	if len(spans) == 0 {
		return body
	}
	out := make([]byte, 0, len(body))
	last := 0
	for _, s := range spans {
		out = append(out, body[last:s[0]]...)
		out = append(out, redactedValue...)
		last = s[1]
	}
	return append(out, body[last:]...)
}

// memberValueSpans returns the byte spans of the values of the members
// named name, in order (a named member inside one is within its span).
func memberValueSpans(body []byte, name string) ([][2]int, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var spans [][2]int
	if err := walkValue(dec, body, name, &spans); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON value")
	}
	return spans, nil
}

// walkValue reads one value from dec, recording the spans of the members
// named name within it.
func walkValue(dec *json.Decoder, body []byte, name string, spans *[][2]int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return err
			}
			afterKey := int(dec.InputOffset())
			if err := walkValue(dec, body, name, spans); err != nil {
				return err
			}
			if key == name {
				// the value starts after the colon and any space
				start := afterKey + len(body[afterKey:]) - len(bytes.TrimLeft(body[afterKey:], " \t\r\n:"))
				// the spans of named members inside this value are within it
				kept := *spans
				for len(kept) > 0 && kept[len(kept)-1][0] >= start {
					kept = kept[:len(kept)-1]
				}
				*spans = append(kept, [2]int{start, int(dec.InputOffset())})
			}
		}
		_, err = dec.Token() // '}'
		return err
	case json.Delim('['):
		for dec.More() {
			if err := walkValue(dec, body, name, spans); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ']'
		return err
	}
	return nil
}
