package embedded

import (
	"encoding/json"
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

// A job's record is stored as CBOR (RFC 8949), with the field names of its
// JSON tags and its times as RFC 3339 text to the nanosecond (a queued
// record's due time names its index key, so it must come back exact).
// A delivery reads its record at lease and writes it at finish, and CBOR
// does both several times faster than encoding/json (codec_test.go's
// benchmark: about 4x to decode, 2x to encode). Records written as JSON by
// earlier versions (the first byte '{', which never begins a CBOR map)
// are still read, and are written as CBOR the next time they change.

var (
	recordEnc cbor.EncMode
	recordDec cbor.DecMode
)

func init() {
	var err error
	if recordEnc, err = (cbor.EncOptions{Time: cbor.TimeRFC3339Nano, TimeTag: cbor.EncTagNone}).EncMode(); err != nil {
		panic(err)
	}
	if recordDec, err = (cbor.DecOptions{}).DecMode(); err != nil {
		panic(err)
	}
}

// encodeRecord is rec as stored.
func encodeRecord(rec *record) ([]byte, error) {
	return recordEnc.Marshal(rec)
}

// decodeRecord decodes v, the stored record of id (nil: none), in
// either encoding.
func decodeRecord(id, v []byte) (*record, error) {
	if v == nil {
		return nil, nil
	}
	rec := new(record)
	var err error
	if len(v) > 0 && v[0] == '{' {
		err = json.Unmarshal(v, rec)
	} else {
		err = recordDec.Unmarshal(v, rec)
	}
	if err != nil {
		return nil, fmt.Errorf("decoding event %s: %w", id, err)
	}
	return rec, nil
}
