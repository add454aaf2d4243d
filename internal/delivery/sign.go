package delivery

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Signer signs forwarded deliveries the Standard Webhooks way
// (sign_forwarded), so that the upstream can verify them with any Standard
// Webhooks (or Svix) library: webhook-id (the event id), webhook-timestamp
// (the attempt's time, in Unix seconds) and webhook-signature ("v1,"
// followed by the base64 HMAC-SHA256 of "id.timestamp.body", one for each
// key, space-separated: rotation). Hand-written (a dozen lines of HMAC)
// because the official Go library only verifies one secret and signs
// nothing but a string; the tests check it with that library.
type Signer struct {
	keys [][]byte
}

// Standard Webhooks headers, as the libraries read them.
const (
	headerWebhookID        = "webhook-id"
	headerWebhookTimestamp = "webhook-timestamp"
	headerWebhookSignature = "webhook-signature"
)

// replacedHeaders are the signature headers a sender may have sent, which
// a signed delivery replaces: the Svix libraries read svix-* before
// webhook-*, so a provider's own would hide hookline's signature.
var replacedHeaders = []string{"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature", "Svix-Id", "Svix-Timestamp", "Svix-Signature"}

// minSigningKey is the shortest key accepted (Standard Webhooks asks for
// 24 to 64 bytes).
const minSigningKey = 16

// NewSigner makes the signer of keys (decoded Standard Webhooks secrets;
// several: rotation, each signs).
func NewSigner(keys [][]byte) (*Signer, error) {
	if len(keys) == 0 {
		return nil, errors.New("sign_forwarded needs a secret")
	}
	for i, key := range keys {
		if len(key) < minSigningKey {
			return nil, fmt.Errorf("sign_forwarded secret %d: %d bytes, want at least %d", i+1, len(key), minSigningKey)
		}
	}
	return &Signer{keys: keys}, nil
}

// Sign sets the Standard Webhooks headers of a delivery of the event id
// with body, made at now, replacing any the sender sent.
func (s *Signer) Sign(h http.Header, id string, body []byte, now time.Time) {
	for _, name := range replacedHeaders {
		h.Del(name)
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	var sigs []string
	for _, key := range s.keys {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id))
		m.Write([]byte{'.'})
		m.Write([]byte(ts))
		m.Write([]byte{'.'})
		m.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	h.Set(headerWebhookID, id)
	h.Set(headerWebhookTimestamp, ts)
	h.Set(headerWebhookSignature, strings.Join(sigs, " "))
}
