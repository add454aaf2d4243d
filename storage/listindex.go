package storage

// The bounds of the operators' bulk listings (DLQList, ListDelivered) and
// what the backends' time indexes keep of each entry so that a listing
// filters on the index alone: a page examines at most ScanBudget index
// entries and reads (decodes) only the entries it answers with, never
// the payloads of the ones a filter leaves out. A page that stopped at
// its budget answers with fewer entries than its limit and a cursor to go
// on, as the event browser does.

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// ListScanFactor bounds the work of one page of DLQList or ListDelivered:
// a backend examines at most ListScanFactor times the page's limit index
// entries before it answers.
const ListScanFactor = 20

// ScanBudget is how many index entries one DLQList page examines at most.
func (f DLQFilter) ScanBudget() int { return f.EffectiveLimit() * ListScanFactor }

// ScanBudget is how many index entries one ListDelivered page examines at
// most.
func (f ReplayFilter) ScanBudget() int { return f.EffectiveLimit() * ListScanFactor }

// IndexEntry is what a backend's time index keeps of a DLQ entry or of a
// finished delivery, beside its time and id: the fields a DLQFilter or a
// ReplayFilter tests. None of them changes after the entry is written but
// Status, which the backends keep current.
type IndexEntry struct {
	Source      string `json:"src"`
	Destination string `json:"dst,omitempty"`
	Type        string `json:"ty,omitempty"`
	// Tenant is the event's tenant ("": none).
	Tenant string `json:"tn,omitempty"`
	// Status is the DLQ entry's DLQStatus, or the finished delivery's
	// Status.
	Status string `json:"st"`
}

// DLQIndexOf is what a DLQ index keeps of e.
func DLQIndexOf(e *DLQEntry) IndexEntry {
	return IndexEntry{Source: e.Source, Destination: e.Destination, Type: e.EventType, Tenant: e.Tenant, Status: string(e.Status)}
}

// FinishedIndexOf is what an index of finished deliveries keeps of job
// ev finished with status st.
func FinishedIndexOf(ev *Event, st Status) IndexEntry {
	return IndexEntry{Source: ev.Source, Destination: ev.Destination, Type: ev.Type, Tenant: ev.Tenant, Status: string(st)}
}

// MatchesIndex reports whether an entry with index ix created at created
// passes the filter (Matches decides).
func (f DLQFilter) MatchesIndex(ix IndexEntry, created time.Time) bool {
	return f.Matches(&DLQEntry{Source: ix.Source, Destination: ix.Destination, EventType: ix.Type,
		Tenant: ix.Tenant, Status: DLQStatus(ix.Status), CreatedAt: created})
}

// MatchesIndex reports whether delivery id with index ix finished at
// finished passes the filter (Matches decides).
func (f ReplayFilter) MatchesIndex(id string, ix IndexEntry, finished time.Time) bool {
	return f.Matches(&Event{ID: id, Source: ix.Source, Destination: ix.Destination, Type: ix.Type,
		Tenant: ix.Tenant}, Status(ix.Status), finished)
}

// Encode is ix as an index value.
func (ix IndexEntry) Encode() []byte {
	b, _ := json.Marshal(ix) // strings only: cannot fail
	return b
}

// DecodeIndexEntry reads an index value written by Encode (ok false for
// an empty or unreadable one: an index written before values existed,
// whose entries a listing reads instead).
func DecodeIndexEntry(v []byte) (ix IndexEntry, ok bool) {
	if len(v) == 0 || json.Unmarshal(v, &ix) != nil || ix.Status == "" {
		return IndexEntry{}, false
	}
	return ix, true
}

// ListPosition is a place in a time index: a time (in the backend's
// resolution, as an integer) and the id after it, the order of every
// index a listing walks.
type ListPosition struct {
	At int64
	ID string
}

// Compare orders positions by time, then id.
func (p ListPosition) Compare(q ListPosition) int {
	switch {
	case p.At < q.At:
		return -1
	case p.At > q.At:
		return 1
	}
	return strings.Compare(p.ID, q.ID)
}

// ListCursor is the cursor continuing a listing after position p.
func ListCursor(p ListPosition) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(p.At, 10) + ":" + p.ID))
}

// ParseListCursor is the position a ListCursor continues after (ok false
// for no cursor), or ErrInvalidCursor.
func ParseListCursor(cursor string) (p ListPosition, ok bool, err error) {
	if cursor == "" {
		return p, false, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	at, id, found := strings.Cut(string(raw), ":")
	if err != nil || !found {
		return p, false, ErrInvalidCursor
	}
	if p.At, err = strconv.ParseInt(at, 10, 64); err != nil {
		return p, false, ErrInvalidCursor
	}
	p.ID = id
	return p, true, nil
}
