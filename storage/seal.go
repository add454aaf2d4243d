package storage

// Encryption at rest. With encryption keys set (the webhooks app's
// encryption_key), every body and header set a backend writes is sealed
// with AES-256-GCM: the event's payload (EncodePayload of its headers and
// body) becomes one sealed blob, in Event.Sealed and DLQEntry.Sealed, or
// as the payload record its deliveries share (SharePayload keeps a sealed
// blob as it is). A sealed record has no Body, Headers or Payload of its
// own. The backends only carry the blob: sealing and opening are the
// SealingStore's (sealing.go), above them, so plaintext never reaches them.
//
// A sealed blob is
//
//	[sealFormat][key id: 4 bytes][nonce: 12 bytes][ciphertext and tag]
//
// where the key id is the first 4 bytes of the key's SHA-256 (KeyID), the
// nonce is random for each seal, and the additional data binds the blob to
// its event's internal ID (EventIDOfDelivery), which every copy of an
// event keeps (its deliveries, its DLQ entries, a DLQ retry, a replay, a
// poison salvage): a blob moved to another event's record does not open.
// The first key of a Keyring seals; every key opens what it sealed, so
// older keys can be kept while a rekey (rekey.go) re-seals under the
// first.

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// sealFormat is the first byte of a sealed blob; payloadFormat (1) starts
// a payload record in clear, so a payload record says which it is.
const sealFormat = 2

// Sizes of a sealed blob's parts.
const (
	keyIDSize  = 4
	nonceSize  = 12
	sealHeader = 1 + keyIDSize + nonceSize
	// KeySize is the size of an encryption key: AES-256.
	KeySize = 32
)

// ErrKeyMissing is the error (errors.Is) of opening a record sealed under
// a key the Keyring does not hold; the error is a *KeyMissingError naming
// the key id.
var ErrKeyMissing = errors.New("encryption key missing")

// ErrSealBroken is the error of a sealed blob that does not open under its
// key: corrupted, truncated, or moved from another event's record.
var ErrSealBroken = errors.New("sealed record does not open (corrupted, or not this event's)")

// KeyMissingError says which key a record needs.
type KeyMissingError struct {
	// KeyID is the id of the key the record was sealed under (KeyID).
	KeyID string
}

func (e *KeyMissingError) Error() string {
	return fmt.Sprintf("record sealed under encryption key %s, which is not configured", e.KeyID)
}

// Is makes errors.Is(err, ErrKeyMissing) hold.
func (e *KeyMissingError) Is(target error) bool { return target == ErrKeyMissing }

// KeyID is the id stored with each record sealed under key: the hex of the
// first 4 bytes of its SHA-256 (it names the key; it does not reveal it).
func KeyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:keyIDSize])
}

// Keyring holds the encryption keys, the first one sealing, all opening.
// A nil or empty Keyring seals nothing and opens nothing (every sealed
// record is ErrKeyMissing). Safe for concurrent use.
type Keyring struct {
	ids   []string // hex key ids, in order
	raw   [][keyIDSize]byte
	aeads []cipher.AEAD
}

// NewKeyring builds a Keyring of keys, each KeySize bytes, the first
// sealing. The same key twice is refused, as is a key of another size;
// errors never show a key.
func NewKeyring(keys ...[]byte) (*Keyring, error) {
	k := &Keyring{}
	for i, key := range keys {
		if len(key) != KeySize {
			return nil, fmt.Errorf("encryption key %d: want %d bytes, got %d", i+1, KeySize, len(key))
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("encryption key %d: %v", i+1, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("encryption key %d: %v", i+1, err)
		}
		sum := sha256.Sum256(key)
		var id [keyIDSize]byte
		copy(id[:], sum[:keyIDSize])
		for j, other := range k.raw {
			if other == id {
				return nil, fmt.Errorf("encryption key %d is the same as key %d", i+1, j+1)
			}
		}
		k.ids = append(k.ids, hex.EncodeToString(id[:]))
		k.raw = append(k.raw, id)
		k.aeads = append(k.aeads, aead)
	}
	return k, nil
}

// ParseKeys builds a Keyring from base64 (standard or URL, padded or not)
// encodings of keys of KeySize bytes, as the encryption_key option takes
// them; an error names the key by its position, never by its value.
func ParseKeys(encoded []string) (*Keyring, error) {
	keys := make([][]byte, 0, len(encoded))
	for i, s := range encoded {
		key, err := decodeKey(strings.TrimSpace(s))
		if err != nil || len(key) != KeySize {
			return nil, fmt.Errorf("encryption key %d is not the base64 encoding of %d bytes", i+1, KeySize)
		}
		keys = append(keys, key)
	}
	return NewKeyring(keys...)
}

func decodeKey(s string) ([]byte, error) {
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		var b []byte
		if b, err = enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, err
}

// Enabled reports whether the Keyring has a key to seal with.
func (k *Keyring) Enabled() bool { return k != nil && len(k.aeads) > 0 }

// CurrentID is the id of the sealing key ("" when none).
func (k *Keyring) CurrentID() string {
	if !k.Enabled() {
		return ""
	}
	return k.ids[0]
}

// Len is the number of keys.
func (k *Keyring) Len() int {
	if k == nil {
		return 0
	}
	return len(k.ids)
}

// aad is the additional data of the records of the event (or delivery)
// id: its event's internal ID.
func aad(id string) []byte { return []byte("hookline/v1\x00" + EventIDOfDelivery(id)) }

// Seal seals plaintext for the record id under the first key (the Keyring
// must be Enabled).
func (k *Keyring) Seal(id string, plaintext []byte) []byte {
	buf := make([]byte, sealHeader, sealHeader+len(plaintext)+k.aeads[0].Overhead())
	return k.sealInPlace(id, append(buf, plaintext...))
}

// sealInPlace seals buf[sealHeader:] into buf, writing the header over its
// first sealHeader bytes (the plaintext is overwritten: GCM allows a
// destination that overlaps its plaintext exactly).
func (k *Keyring) sealInPlace(id string, buf []byte) []byte {
	buf[0] = sealFormat
	copy(buf[1:], k.raw[0][:])
	nonce := buf[1+keyIDSize : sealHeader]
	if _, err := rand.Read(nonce); err != nil {
		panic("hookline: reading random nonce: " + err.Error()) // crypto/rand never fails on supported systems
	}
	return k.aeads[0].Seal(buf[:sealHeader], nonce, buf[sealHeader:], aad(id))
}

// Open opens sealed, a blob Seal made for the record id: a
// *KeyMissingError when its key is not in the Keyring, ErrSealBroken when
// it does not open.
func (k *Keyring) Open(id string, sealed []byte) ([]byte, error) {
	i, err := k.keyOf(sealed)
	if err != nil {
		return nil, err
	}
	nonce := sealed[1+keyIDSize : sealHeader]
	out, err := k.aeads[i].Open(nil, nonce, sealed[sealHeader:], aad(id))
	if err != nil {
		return nil, fmt.Errorf("%w (record %s)", ErrSealBroken, id)
	}
	return out, nil
}

// keyOf is the index of the key sealed was sealed under.
func (k *Keyring) keyOf(sealed []byte) (int, error) {
	if !IsSealed(sealed) || len(sealed) < sealHeader {
		return 0, ErrSealBroken
	}
	if k != nil {
		for i, id := range k.raw {
			if bytes.Equal(id[:], sealed[1:1+keyIDSize]) {
				return i, nil
			}
		}
	}
	return 0, &KeyMissingError{KeyID: SealKeyID(sealed)}
}

// IsSealed reports whether b is a sealed blob (not a payload record in
// clear).
func IsSealed(b []byte) bool { return len(b) > 0 && b[0] == sealFormat }

// SealKeyID is the id of the key sealed was sealed under ("" if it is not
// a sealed blob).
func SealKeyID(sealed []byte) string {
	if !IsSealed(sealed) || len(sealed) < 1+keyIDSize {
		return ""
	}
	return hex.EncodeToString(sealed[1 : 1+keyIDSize])
}

// Current reports whether sealed was sealed under the first key.
func (k *Keyring) Current(sealed []byte) bool {
	i, err := k.keyOf(sealed)
	return err == nil && i == 0
}

// SealEvent seals ev's headers and body into ev.Sealed (the Keyring must
// be Enabled) and clears them. A job marked SharedPayload without a body
// of its own and an event already sealed are left as they are.
func (k *Keyring) SealEvent(ev *Event) {
	if ev.Sealed != nil || (ev.SharedPayload && ev.Body == nil && ev.Headers == nil) {
		return
	}
	// one buffer: the header, the payload encoded after it, sealed in place
	aead := k.aeads[0]
	buf := appendPayload(make([]byte, sealHeader), aead.Overhead(), ev.Headers, ev.Body)
	ev.Sealed = k.sealInPlace(ev.ID, buf)
	ev.Headers, ev.Body = nil, nil
}

// OpenEvent gives ev the headers and body of ev.Sealed and clears it; an
// event not sealed is left as it is.
func (k *Keyring) OpenEvent(ev *Event) error {
	if ev.Sealed == nil {
		return nil
	}
	h, body, err := k.openPayload(ev.ID, ev.Sealed)
	if err != nil {
		return err
	}
	ev.Headers, ev.Body, ev.Sealed = h, body, nil
	return nil
}

// OpenEntry gives e the headers and payload of e.Sealed and clears it; an
// entry not sealed is left as it is.
func (k *Keyring) OpenEntry(e *DLQEntry) error {
	if e.Sealed == nil {
		return nil
	}
	h, body, err := k.openPayload(e.ID, e.Sealed)
	if err != nil {
		return err
	}
	e.Headers, e.Payload, e.Sealed = h, body, nil
	return nil
}

func (k *Keyring) openPayload(id string, sealed []byte) (http.Header, []byte, error) {
	plain, err := k.Open(id, sealed)
	if err != nil {
		return nil, nil, err
	}
	return DecodePayload(plain)
}

// reseal is sealed re-sealed under the first key, or nil when it is under
// it already.
func (k *Keyring) reseal(id string, sealed []byte) ([]byte, error) {
	if k.Current(sealed) {
		return nil, nil
	}
	plain, err := k.Open(id, sealed)
	if err != nil {
		return nil, err
	}
	return k.Seal(id, plain), nil
}

// ResealEvent makes a stored event (or job) record sealed under the first
// key: a record sealed under an older key is re-sealed, one in clear is
// sealed (a job reading its event's payload record has nothing of its
// own). changed reports whether the record must be written back. The
// Keyring must be Enabled.
func (k *Keyring) ResealEvent(ev *Event) (changed bool, err error) {
	if ev.Sealed == nil {
		if ev.Body == nil && ev.Headers == nil {
			return false, nil
		}
		k.SealEvent(ev)
		return true, nil
	}
	b, err := k.reseal(ev.ID, ev.Sealed)
	if err != nil || b == nil {
		return false, err
	}
	ev.Sealed = b
	return true, nil
}

// ResealEntry is ResealEvent for a DLQ entry.
func (k *Keyring) ResealEntry(e *DLQEntry) (changed bool, err error) {
	if e.Sealed == nil {
		if e.Payload == nil && e.Headers == nil {
			return false, nil
		}
		e.Sealed = k.Seal(e.ID, EncodePayload(e.Headers, e.Payload))
		e.Headers, e.Payload = nil, nil
		return true, nil
	}
	b, err := k.reseal(e.ID, e.Sealed)
	if err != nil || b == nil {
		return false, err
	}
	e.Sealed = b
	return true, nil
}

// ResealPayload is ResealEvent for the payload record of event id: the
// record to write back, or nil when it is sealed under the first key
// already.
func (k *Keyring) ResealPayload(id string, record []byte) ([]byte, error) {
	if IsSealed(record) {
		return k.reseal(id, record)
	}
	return k.Seal(id, record), nil // a payload record in clear is EncodePayload's
}
