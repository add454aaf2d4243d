package storage

import "strings"

// ClaimKey is the key under which (source, eventID) is claimed for
// deduplication and under which its event is found again by Lookup:
// source \x00 eventID. Both backends key their claims and their
// (source, event id) -> id indexes with it, and Redis hashes it to pick the
// partition of a deduplicated event.
func ClaimKey(source, eventID string) string { return source + "\x00" + eventID }

// SplitClaimKey returns the source and event id of a claim key (ok false
// when ck is not one).
func SplitClaimKey(ck string) (source, eventID string, ok bool) {
	return strings.Cut(ck, "\x00")
}
