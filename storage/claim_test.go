package storage

import "testing"

func TestClaimKey(t *testing.T) {
	for _, tc := range []struct {
		source, eventID string
		want            string
	}{
		{"stripe", "evt_1", "stripe\x00evt_1"},
		{"", "evt_1", "\x00evt_1"},
		{"stripe", "", "stripe\x00"},
		// the event id may hold anything, a \x00 too: the source may not
		{"github", "a\x00b", "github\x00a\x00b"},
	} {
		ck := ClaimKey(tc.source, tc.eventID)
		if ck != tc.want {
			t.Errorf("ClaimKey(%q, %q) = %q, want %q", tc.source, tc.eventID, ck, tc.want)
		}
		source, eventID, ok := SplitClaimKey(ck)
		if !ok || source != tc.source || eventID != tc.eventID {
			t.Errorf("SplitClaimKey(%q) = %q, %q, %v; want %q, %q", ck, source, eventID, ok, tc.source, tc.eventID)
		}
	}
	if _, _, ok := SplitClaimKey("no separator"); ok {
		t.Error("SplitClaimKey of a string without \\x00 succeeded")
	}
}
