package spool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/hookline/hookline/storage"
)

// Store is a shared store (Redis) that never refuses an event for being
// unreachable: an event it cannot take (storage.ErrUnavailable) is spooled
// on this node's disk and answered as accepted, and a mover moves the
// spooled events into it, in the order they were spooled, as soon as it
// answers again (it tries every second, and no traffic is needed). Each
// is removed from the spool only once the store has it; one moved twice
// (a crash in between) is a duplicate there, never a second delivery.
//
// While events are spooled, the shared store is only the truth for what
// it holds: a resend of an event waiting in the spool is a duplicate
// (StatusSpooled), and an event with an ordered delivery waits in the
// spool behind them, so that its key's order holds. Delivery goes on from
// the shared store only: a spooled event is delivered once it is moved.
type Store struct {
	storage.Store // the shared store
	sp            *Spool
	log           *zap.Logger
	now           func() time.Time
	retry         time.Duration
	moveTimeout   time.Duration

	wake      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	// hookMu orders the starts and ends of spooling with the calls of
	// the OnChange function that report them: one at a time, in order
	hookMu   sync.Mutex
	mu       sync.Mutex
	spooling bool      // since the first event spooled, until the spool is empty again
	since    time.Time // when spooling started
	// earlier is a start not yet reported: events an earlier run spooled,
	// found when the spool was opened, before OnChange was set
	earlier  bool
	onChange atomic.Pointer[func(Change)]
	// failures counts the mover's failed tries since its last move.
	failures atomic.Int64
	// closeSpool releases the spool (StoreOptions.CloseSpool).
	closeSpool func() error
}

// Interface guard
var _ storage.Store = (*Store)(nil)

// StoreOptions tune NewStore.
type StoreOptions struct {
	// Log gets the spooling's start and end and the mover's failures
	// (never an event's body or headers).
	Log *zap.Logger
	// Retry is how long the mover waits after the store failed it before
	// it tries again (default 1s).
	Retry time.Duration
	// MoveTimeout is how long the store may take to take one event before
	// the mover gives up on it and tries again after Retry (default 10s).
	MoveTimeout time.Duration
	// Now replaces time.Now (tests).
	Now func() time.Time
	// CloseSpool releases the spool when the store is closed (default:
	// Spool.Close); a spool shared by the stores of a reload's old and
	// new config is released by its last user.
	CloseSpool func() error
}

// NewStore wraps the shared store inner with spool sp, and starts the
// mover (a spool holding events from a previous run is moved as soon as
// the store answers). Close stops it and closes both.
func NewStore(inner storage.Store, sp *Spool, opts StoreOptions) *Store {
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.Retry <= 0 {
		opts.Retry = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MoveTimeout <= 0 {
		opts.MoveTimeout = 10 * time.Second
	}
	if opts.CloseSpool == nil {
		opts.CloseSpool = sp.Close
	}
	s := &Store{Store: inner, sp: sp, log: opts.Log, now: opts.Now, retry: opts.Retry, moveTimeout: opts.MoveTimeout, closeSpool: opts.CloseSpool,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if !sp.Empty() {
		// events an earlier run spooled, or, for a store sharing the spool
		// with another (a reload), events spooled in this run: reported
		// as a start only in the first case
		s.spooling, s.earlier = true, sp.takeEarlier()
		s.since = sp.Stats().Oldest
		if s.earlier {
			s.log.Warn("events spooled by an earlier run wait to be moved into the store",
				zap.String("spool", sp.Dir()), zap.Int64("events", sp.Stats().Events))
		}
	}
	go s.move()
	return s
}

// Spool is the store's spool.
func (s *Store) Spool() *Spool { return s.sp }

// Unwrap returns the shared store.
func (s *Store) Unwrap() storage.Store { return s.Store }

// Change is a start or an end of spooling, as OnChange reports it.
type Change struct {
	// Spooling is true when the node starts spooling (the first event
	// spooled after none was), false once every spooled event is moved.
	Spooling bool
	// Since is when spooling started: the first event's spooling, or,
	// for a spool an earlier run left, its oldest event's.
	Since time.Time
	// Events is, at a start, how many events the spool holds; at an end,
	// how many were moved into the store since the start.
	Events int64
	// Earlier is true for a start that is a spool an earlier run of this
	// node left (found when the store was opened), not a new outage.
	Earlier bool
}

// OnChange sets fn to be called at every start and end of spooling, one
// call at a time and in their order. fn is called on the request or the
// mover that makes the change: it must not block, nor call the store. It
// replaces the fn set before (the app of a reload sets its own on the
// store it shares with the old one). A spool that held events when it
// was opened is reported as a start to the first fn set.
func (s *Store) OnChange(fn func(Change)) {
	s.hookMu.Lock()
	defer s.hookMu.Unlock()
	s.onChange.Store(&fn)
	s.mu.Lock()
	earlier := s.earlier && s.spooling
	s.earlier = false
	since := s.since
	s.mu.Unlock()
	if earlier {
		fn(Change{Spooling: true, Since: since, Events: s.sp.Stats().Events, Earlier: true})
	}
}

// changed calls the OnChange function.
func (s *Store) changed(c Change) {
	if fn := s.onChange.Load(); fn != nil && *fn != nil {
		(*fn)(c)
	}
}

// Enqueue implements storage.Queue: the shared store's, unless the event
// is a resend of one spooled (a duplicate, StatusSpooled), has an ordered
// delivery while events are spooled, or the store is unreachable; the
// event is then spooled, and answered StatusSpooled. A spool that cannot
// take it (full, a failing disk) answers as the store did.
func (s *Store) Enqueue(ctx context.Context, ev *storage.Event, dedupeUntil time.Time) (storage.EnqueueResult, error) {
	if !s.sp.Empty() {
		if ev.Dedupe {
			e, ok, err := s.sp.Lookup(ev.Source, ev.EventID, s.now())
			if err != nil {
				return storage.EnqueueResult{}, err
			}
			if ok {
				return storage.EnqueueResult{Duplicate: true, ID: e.Event.ID, Status: storage.StatusSpooled, DedupeUntil: e.DedupeUntil}, nil
			}
		}
		if ordered(ev) {
			return s.spool(ctx, ev, dedupeUntil, nil)
		}
	}
	res, err := s.Store.Enqueue(ctx, ev, dedupeUntil)
	if err == nil || !errors.Is(err, storage.ErrUnavailable) || ctx.Err() != nil {
		return res, err
	}
	return s.spool(ctx, ev, dedupeUntil, err)
}

// ordered reports whether ev has a delivery of an ordered destination
// (storage.OrderKeyOf); one the store will refuse (two order keys) waits
// too.
func ordered(ev *storage.Event) bool {
	key, err := storage.OrderKeyOf(ev)
	return key != "" || err != nil
}

// spool spools ev; cause is the store's error that sent it there (nil:
// it waits behind the spool).
func (s *Store) spool(ctx context.Context, ev *storage.Event, dedupeUntil time.Time, cause error) (storage.EnqueueResult, error) {
	res, err := s.sp.Put(ctx, ev, dedupeUntil)
	if err != nil {
		if cause != nil {
			s.log.Error("the store is unreachable and the spool did not take the event",
				zap.String("spool", s.sp.Dir()), zap.NamedError("store_error", cause), zap.Error(err))
		}
		return storage.EnqueueResult{}, err
	}
	if res.Duplicate {
		return storage.EnqueueResult{Duplicate: true, ID: res.ID, Status: storage.StatusSpooled, DedupeUntil: res.DedupeUntil}, nil
	}
	s.started(cause)
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return storage.EnqueueResult{ID: res.ID, Status: storage.StatusSpooled}, nil
}

// started records that an event was spooled.
func (s *Store) started(cause error) {
	if s.isSpooling() {
		return
	}
	s.hookMu.Lock()
	defer s.hookMu.Unlock()
	s.mu.Lock()
	was := s.spooling
	if !was {
		s.spooling, s.since = true, s.now()
	}
	since := s.since
	s.mu.Unlock()
	if was {
		return
	}
	s.log.Warn("the store is unreachable: accepted events are spooled on this node until it answers",
		zap.String("spool", s.sp.Dir()), zap.NamedError("store_error", cause))
	s.changed(Change{Spooling: true, Since: since, Events: s.sp.Stats().Events})
}

// ended records that the spool is empty again, unless an event was
// spooled since the mover saw it empty (started then saw spooling set);
// it reports whether the spooling (if any) is over.
func (s *Store) ended(moved int) bool {
	s.hookMu.Lock()
	defer s.hookMu.Unlock()
	s.mu.Lock()
	if !s.sp.Empty() {
		s.mu.Unlock()
		return false
	}
	was, since := s.spooling, s.since
	s.spooling, s.earlier = false, false
	s.mu.Unlock()
	if was {
		s.log.Info("the spooled events are in the store again", zap.String("spool", s.sp.Dir()), zap.Int("moved", moved))
		s.changed(Change{Since: since, Events: int64(moved)})
	}
	return true
}

// moveBatch is how many spooled events the mover reads at a time.
const moveBatch = 64

// move is the mover: while events are spooled, it moves them into the
// store in order, waiting Retry after each failure.
func (s *Store) move() {
	defer close(s.done)
	moved := 0
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		if s.sp.Empty() {
			// moved counts on while an event spooled meanwhile keeps the
			// spooling going
			if s.ended(moved) {
				moved = 0
			}
			select {
			case <-s.wake:
			case <-s.stop:
				return
			}
			continue
		}
		n, err := s.moveSome()
		moved += n
		if err != nil {
			select {
			case <-time.After(s.retry):
			case <-s.stop:
				return
			}
		}
	}
}

func (s *Store) isSpooling() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spooling
}

// moveSome moves up to moveBatch events, in order, stopping at the first
// the store does not take; it removes those moved (and the damaged ones,
// dropped) from the spool, and returns how many were moved.
func (s *Store) moveSome() (n int, err error) {
	entries, err := s.sp.Next(moveBatch)
	if err != nil {
		s.log.Error("reading the spool", zap.String("spool", s.sp.Dir()), zap.Error(err))
		return 0, err
	}
	var done []uint64
	defer func() {
		if len(done) == 0 {
			return
		}
		if rerr := s.sp.Remove(done...); rerr != nil {
			s.log.Error("removing moved events from the spool (they will be moved again, as duplicates)",
				zap.String("spool", s.sp.Dir()), zap.Error(rerr))
			if err == nil {
				err = rerr // the mover waits before it tries again
			}
		}
	}()
	for _, e := range entries {
		select {
		case <-s.stop:
			return n, nil
		default:
		}
		if e.Err != nil {
			// a damaged record cannot be delivered: say so, and go on
			s.log.Error("a spooled record does not read; it is dropped", zap.String("spool", s.sp.Dir()),
				zap.Uint64("seq", e.Seq), zap.Error(e.Err))
			done = append(done, e.Seq)
			continue
		}
		// a second move (a crash before its removal) finds the event in
		// the store: its claim, or, for one not deduplicated, its first
		// delivery's record, named by its unique id
		err := s.moveOne(e)
		if err != nil {
			s.failing(e, err)
			return n, err
		}
		s.recovered()
		done = append(done, e.Seq)
		n++
	}
	return n, nil
}

// moveOne enqueues spooled event e into the store, giving up when the
// store takes too long or the mover is stopped.
func (s *Store) moveOne(e Entry) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.moveTimeout)
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	_, err := s.Store.Enqueue(ctx, e.Event, e.DedupeUntil)
	return err
}

// failing logs a failed move: the first of a run of failures as a
// warning (the event named, never its body), the others at debug level.
func (s *Store) failing(e Entry, err error) {
	lvl := zap.DebugLevel
	if s.failures.Add(1) == 1 {
		lvl = zap.WarnLevel
	}
	if ce := s.log.Check(lvl, "moving a spooled event into the store failed; trying again"); ce != nil {
		ce.Write(zap.String("spool", s.sp.Dir()), zap.String("source", e.Event.Source), zap.String("event_id", e.Event.EventID),
			zap.String("id", e.Event.ID), zap.Error(err), zap.Duration("retry_in", s.retry))
	}
}

// recovered ends a run of failed moves.
func (s *Store) recovered() {
	if n := s.failures.Swap(0); n > 0 {
		s.log.Info("moving spooled events into the store again", zap.String("spool", s.sp.Dir()), zap.Int64("failed_tries", n))
	}
}

// Lookup implements storage.Operations: an event waiting in the spool is
// StatusSpooled; others are the store's.
func (s *Store) Lookup(ctx context.Context, source, eventID string) (*storage.EventInfo, error) {
	if !s.sp.Empty() {
		if e, ok, err := s.sp.Lookup(source, eventID, time.Time{}); err == nil && ok {
			return &storage.EventInfo{ID: e.Event.ID, EventID: e.Event.EventID, Source: e.Event.Source,
				EventType: e.Event.Type, Tenant: e.Event.Tenant, RequestID: e.Event.RequestID, Status: storage.StatusSpooled,
				ReceivedAt: e.Event.ReceivedAt, Attempts: []storage.Attempt{}}, nil
		}
	}
	return s.Store.Lookup(ctx, source, eventID)
}

// Erase implements storage.Eraser: an event waiting in the spool is
// storage.ErrSpooled (409: it cannot be erased before it reaches the
// store, where it is then erased as any other); others are the store's.
func (s *Store) Erase(ctx context.Context, source, eventID string, now time.Time) (storage.EraseResult, error) {
	if !s.sp.Empty() {
		_, ok, err := s.sp.Lookup(source, eventID, time.Time{})
		if err != nil {
			return storage.EraseResult{}, err
		}
		if ok {
			return storage.EraseResult{}, storage.ErrSpooled
		}
	}
	return s.Store.Erase(ctx, source, eventID, now)
}

// Close stops the mover and closes the spool, then the shared store.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
		err = errors.Join(s.closeSpool(), s.Store.Close())
	})
	return err
}
