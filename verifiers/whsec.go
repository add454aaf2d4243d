package verifiers

import (
	"errors"
	"strings"
)

// DecodeStandardSecret is the key of a Standard Webhooks secret as the
// standard scheme reads it: "whsec_" (optional) and canonical standard
// base64, padded or not. sign_forwarded signs with such keys, so that the
// secret a user gives both ends is read alike. The error never holds the
// secret.
func DecodeStandardSecret(secret string) ([]byte, error) {
	key, ok := decodeWhsec(strings.TrimPrefix(secret, standardSecretPrefix))
	switch {
	case !ok:
		return nil, errors.New("not a Standard Webhooks secret: whsec_ and standard base64")
	case len(key) == 0:
		return nil, errors.New("empty Standard Webhooks secret")
	}
	return key, nil
}
