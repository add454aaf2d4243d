package storage

import (
	"context"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestNewLeaseToken(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		tok := NewLeaseToken()
		if b, err := hex.DecodeString(tok); err != nil || len(b) != 8 {
			t.Fatalf("token %q: want 16 hex digits", tok)
		}
		if seen[tok] {
			t.Fatalf("token %q handed out twice", tok)
		}
		seen[tok] = true
	}
}

func TestOutcomeDueAt(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	later := now.Add(time.Minute)
	for _, tc := range []struct {
		name string
		out  Outcome
		want time.Time
	}{
		{"release without a due time: now", Outcome{Result: Release}, now},
		{"release later", Outcome{Result: Release, Due: later}, later},
		{"retry later", Outcome{Result: Retry, Due: later}, later},
		{"retry without a due time: now", Outcome{Result: Retry}, now},
		{"a due time in the past is kept", Outcome{Result: Retry, Due: now.Add(-time.Hour)}, now.Add(-time.Hour)},
	} {
		if got := tc.out.DueAt(now); !got.Equal(tc.want) {
			t.Errorf("%s: DueAt = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLeaseWanted(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		n        int
		wantWant bool
		wantErr  error
	}{
		{name: "jobs wanted", ctx: context.Background(), n: 3, wantWant: true},
		{name: "zero jobs", ctx: context.Background(), n: 0},
		{name: "negative", ctx: context.Background(), n: -1},
		{name: "ctx done", ctx: done, n: 3, wantErr: context.Canceled},
		{name: "ctx done, zero jobs", ctx: done, n: 0, wantErr: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := LeaseWanted(tc.ctx, tc.n)
			if want != tc.wantWant || !errors.Is(err, tc.wantErr) {
				t.Fatalf("LeaseWanted = %v, %v; want %v, %v", want, err, tc.wantWant, tc.wantErr)
			}
		})
	}
}

func TestNamedDue(t *testing.T) {
	due := time.Unix(1_700_000_000, 0)
	plain := Event{ID: "e1", Source: "stripe"}
	dest := Event{ID: "e2~crm", Source: "shop", Destination: "crm"}
	ordered := Event{ID: "e3", Source: "orders", OrderKey: "K"}
	replay := Event{ID: "e4", Source: "orders", OrderKey: "K", Replay: true}
	tests := []struct {
		name string
		jobs []Event
		want []Candidate
	}{
		{"none", nil, nil},
		{"one delivery", []Event{plain}, []Candidate{{Lane: LaneOf(&plain), Due: due, ID: "e1", Part: 3}}},
		{"the ordered one left out", []Event{dest, ordered}, []Candidate{{Lane: LaneOf(&dest), Due: due, ID: "e2~crm", Part: 3}}},
		{"a replay is not chained", []Event{replay}, []Candidate{{Lane: LaneOf(&replay), Due: due, ID: "e4", Part: 3}}},
	}
	for _, tt := range tests {
		if got := NamedDue(tt.jobs, due, 3); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: NamedDue = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestLeasableNamed(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	cands := []Candidate{{ID: "past", Due: now.Add(-time.Second)}, {ID: "now", Due: now}, {ID: "later", Due: now.Add(time.Millisecond)}}
	got, err := LeasableNamed(context.Background(), cands, now)
	if err != nil || len(got) != 2 || got[0].ID != "past" || got[1].ID != "now" {
		t.Errorf("LeasableNamed = %+v, %v; want past and now", got, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got, err := LeasableNamed(ctx, cands, now); err == nil || got != nil {
		t.Errorf("LeasableNamed with ctx done = %+v, %v; want ctx's error", got, err)
	}
}
