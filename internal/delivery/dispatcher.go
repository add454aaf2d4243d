package delivery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/storage"
)

// Report is passed to Config.OnResult after each finished job.
type Report struct {
	Job      *storage.Job
	Result   storage.Result
	Class    Class
	Attempt  *storage.Attempt
	Upstream string
	// Error is why a Dead job died (its DLQ entry's error).
	Error string
}

// Config configures a Dispatcher.
type Config struct {
	Store   storage.Queue
	Workers int
	Lease   time.Duration
	// Targets are the configured sources' destinations, by source and
	// then destination (storage.DefaultDestination: forward_to), each built
	// by NewTarget; not changed once given (SetTargets replaces them). At each lease the dispatcher gates their lanes, each
	// destination on its own, as decide says (held, capped to a breaker's
	// trial, paced; see storage.Gate): their waiting jobs cost no store
	// work. A job whose source or destination is not here goes to its
	// stored upstream with the defaults, ungated.
	Targets map[string]map[string]*Target
	// Holds, if set, is the operators' say: paused deliveries wait, with
	// no attempt used, and a resumed pause's backlog drains paced.
	Holds Holds
	// Client sends the upstream requests (nil: a client with no redirects).
	Client *http.Client
	// Tracer returns the tracer provider of Caddy's tracing, once known
	// (nil: none); the attempts of events carrying a trace are spans of it
	// (trace.go).
	Tracer func() trace.TracerProvider
	Logger *zap.Logger
	// OnResult, if set, is called after each job is finished (metrics, L1).
	OnResult func(Report)
	// Idle bounds how long the lease loop sleeps when nothing is due, so
	// jobs enqueued by other processes sharing the store are noticed.
	Idle time.Duration
	// Prefetch is how many leased jobs may wait for a free worker (default:
	// 4*Workers; negative: none). Prefetching lets one lease (one store
	// round trip, one fsync) cover many jobs while the workers are busy;
	// it also bounds the outcomes recorded at once (Workers+Prefetch).
	Prefetch int
	// Breakers are the upstreams' circuit breakers, shared across reloads
	// (nil: a set of the dispatcher's own with the settings below).
	Breakers *Breakers
	// Breaker settings per destination (its upstream URL): it opens after
	// Failures consecutive transient failures; while open it lets one
	// trial through every Open.
	BreakerFailures uint32
	BreakerOpen     time.Duration
	// Busy, if set, reports that ingest is under load. While it does,
	// the dispatcher holds at most Yield jobs under lease (prefetched ones
	// included): accepting comes first, and delivery takes the capacity
	// ingest leaves, catching up at full speed once Busy reports false.
	Busy func() bool
	// Yield is how many jobs may be under lease while Busy reports true
	// (default: a quarter of Workers, at least 1). Deliveries never stop
	// under load; they slow down.
	Yield int
}

// Defaults of Config.
const (
	DefaultWorkers         = 16
	DefaultLease           = time.Minute
	DefaultIdle            = time.Second
	DefaultTimeout         = 10 * time.Second
	DefaultBreakerFailures = 5
	DefaultBreakerOpen     = 2 * time.Second
	// yieldRecheck is how often the lease loop looks again, while ingest
	// is busy and Yield jobs are under lease, whether it may lease more.
	yieldRecheck = 5 * time.Millisecond
)

// Dispatcher leases due jobs and delivers them with a fixed pool of
// workers. A worker hands a delivered job's outcome to the store and takes
// its next job while the store records it; the job stays under lease until
// then, so an outcome lost in a crash means a redelivery, never a lost
// event. The dispatcher holds at most Workers+Prefetch jobs leased and not
// yet delivered, and as many again whose outcome is being recorded, so
// memory stays flat however long the backlog in the store, and a leased
// job never waits for a worker longer than the deliveries ahead of it take.
type Dispatcher struct {
	cfg    Config
	log    *zap.Logger
	client *http.Client
	traced *http.Client // client through otelhttp, for traced events
	notify chan struct{}
	// slots holds one token per job the dispatcher may hold leased and
	// not yet delivered; a job returns its token once its outcome is
	// known (record) or recorded (finish).
	slots chan struct{}
	// outcomes passes delivered jobs' outcomes to the recorders (Workers+
	// Prefetch goroutines, at most maxRecorders), which record them in the
	// background (record): long-lived, so that an outcome costs no
	// goroutine start and no stack growth in the store's and the logger's
	// calls.
	outcomes chan outcome
	// queue passes leased jobs to the workers.
	queue chan *storage.Job
	// batch is the fewest free slots worth a lease while workers still have
	// prefetched jobs to work on.
	batch int
	// held counts the jobs under lease: leased and not yet finished (their
	// outcome recorded).
	held atomic.Int64
	// hints are jobs this process enqueued, due at once, that the loop
	// leases by name (Hint); at most cap(slots) wait.
	hintMu sync.Mutex
	hints  []storage.Candidate
	// peekFirst makes the loop's next round a Lease, not a LeaseNamed:
	// other jobs are due, and hints must not keep them waiting.
	peekFirst bool

	stopLoop    context.CancelFunc
	loopCtx     context.Context
	deliverCtx  context.Context
	stopDeliver context.CancelFunc
	loopDone    chan struct{}
	wg          sync.WaitGroup

	breakers *Breakers
	// targets are Config.Targets, or what SetTargets put in their place
	targets atomic.Pointer[map[string]map[string]*Target]
	// trialLanes are, at the lease loop's latest gate, the lanes capped
	// to one trial job, and their breakers' names (the loop's own)
	trialLanes map[string]string
}

// New makes a Dispatcher; call Start to run it.
func New(cfg Config) *Dispatcher {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Idle <= 0 {
		cfg.Idle = DefaultIdle
	}
	if cfg.BreakerFailures == 0 {
		cfg.BreakerFailures = DefaultBreakerFailures
	}
	if cfg.BreakerOpen <= 0 {
		cfg.BreakerOpen = DefaultBreakerOpen
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Prefetch == 0 {
		cfg.Prefetch = 4 * cfg.Workers
	}
	if cfg.Yield <= 0 {
		cfg.Yield = max(1, cfg.Workers/4)
	}
	prefetch := max(cfg.Prefetch, 0)
	client := cfg.Client
	if client == nil {
		client = NewClient(cfg.Workers)
	}
	d := &Dispatcher{
		cfg:      cfg,
		log:      cfg.Logger,
		client:   client,
		traced:   tracedClient(client),
		notify:   make(chan struct{}, 1),
		slots:    make(chan struct{}, cfg.Workers+prefetch),
		outcomes: make(chan outcome),
		queue:    make(chan *storage.Job, prefetch),
		batch:    1,
		loopDone: make(chan struct{}),
		breakers: cfg.Breakers,

		trialLanes: map[string]string{},
	}
	if d.breakers == nil {
		d.breakers = NewBreakers(cfg.BreakerFailures, cfg.BreakerOpen, cfg.Logger)
	}
	d.targets.Store(&cfg.Targets)
	if prefetch > 0 {
		d.batch = max(1, (cfg.Workers+prefetch)/2)
	}
	for range cfg.Workers + prefetch {
		d.slots <- struct{}{}
	}
	return d
}

// NewClient is an HTTP client for upstream deliveries: pooled keep-alive
// connections sized to the worker count, and no redirects (a 3xx answer is
// a permanent failure, not something to POST a webhook to again).
func NewClient(workers int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = max(100, workers*2)
	tr.MaxIdleConnsPerHost = max(16, workers)
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// SetTargets replaces Config.Targets, for a source configured once the
// dispatcher runs (a handler provisioned into a running config); the map
// is not changed afterwards.
func (d *Dispatcher) SetTargets(targets map[string]map[string]*Target) {
	d.targets.Store(&targets)
}

// Start runs the lease loop and the workers.
func (d *Dispatcher) Start() {
	d.loopCtx, d.stopLoop = context.WithCancel(context.Background())
	d.deliverCtx, d.stopDeliver = context.WithCancel(context.Background())
	var workers sync.WaitGroup
	for range d.cfg.Workers {
		d.wg.Add(1)
		workers.Add(1)
		go func() {
			defer workers.Done()
			d.worker()
		}()
	}
	for range min(cap(d.slots), maxRecorders) {
		go d.recorder()
	}
	go func() {
		// the workers are the only senders: once they are gone, the
		// recorders finish what was handed to them and end
		workers.Wait()
		close(d.outcomes)
	}()
	go d.loop()
}

// worker delivers leased jobs until the loop closes the queue. Once Stop
// has begun, jobs still waiting in the queue are released untouched.
func (d *Dispatcher) worker() {
	defer d.wg.Done()
	for job := range d.queue {
		if d.loopCtx.Err() != nil {
			d.finish(job, storage.Outcome{Result: storage.Release}, Report{})
			continue
		}
		d.run(job)
	}
}

// Hint hands the loop jobs of source this process just enqueued, due at
// once (storage.EnqueueResult.Due), and wakes it: it leases them by name
// (storage.Queue.LeaseNamed), without looking for them. The jobs of a
// source an operator holds wait without a hint or a wake (the resume wakes
// the loop): a round for them would be a lease for nothing. Hints beyond
// Workers+Prefetch waiting are dropped: the next Lease finds those jobs.
func (d *Dispatcher) Hint(source string, cands []storage.Candidate) {
	if d.paused(source, "") {
		return
	}
	if len(cands) > 0 {
		d.hintMu.Lock()
		room := cap(d.slots) - len(d.hints)
		d.hints = append(d.hints, cands[:min(len(cands), max(room, 0))]...)
		d.hintMu.Unlock()
	}
	d.Notify()
}

// takeHints takes up to n hints the gate lets be leased by name: those of
// lanes it skips, paces or caps are dropped (Lease takes those jobs in
// their turn). more reports hints left waiting.
func (d *Dispatcher) takeHints(gate *storage.Gate, n int) (out []storage.Candidate, more bool) {
	d.hintMu.Lock()
	defer d.hintMu.Unlock()
	i := 0
	for ; i < len(d.hints) && len(out) < n; i++ {
		if c := d.hints[i]; gate.Open(c.Lane) {
			out = append(out, c)
		}
	}
	d.hints = d.hints[:copy(d.hints, d.hints[i:])]
	return out, len(d.hints) > 0
}

// Notify wakes the lease loop: a job was enqueued or re-enqueued.
func (d *Dispatcher) Notify() {
	select {
	case d.notify <- struct{}{}:
	default:
	}
}

// Stop stops leasing, lets deliveries in progress finish for up to grace,
// then cancels the rest; a cancelled delivery is released back to the
// queue (no attempt counted) so another instance picks it up at once.
func (d *Dispatcher) Stop(grace time.Duration) {
	if d.stopLoop == nil {
		return
	}
	d.stopLoop()
	<-d.loopDone
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		// cancel what is still in progress; recording the releases is
		// bounded too, and whatever is not recorded waits for its lease
		d.stopDeliver()
		t2 := time.NewTimer(2 * time.Second)
		defer t2.Stop()
		select {
		case <-done:
		case <-t2.C:
			d.log.Warn("stopping: deliveries still finishing; their jobs return after their leases")
		}
	}
	d.stopDeliver()
	if d.cfg.Client == nil {
		// its own client's keep-alive connections end with it: a reload
		// starts a dispatcher with a new client, and the old one's idle
		// connections (two goroutines each) would wait out their timeout
		d.client.CloseIdleConnections()
	}
}

func (d *Dispatcher) loop() {
	defer close(d.loopDone)
	defer close(d.queue)
	ctx := d.loopCtx
	total := cap(d.slots)
	errDelay := 100 * time.Millisecond
	for {
		// wait for one free slot; then take every other free one, and while
		// the workers still have prefetched jobs, wait for a batch worth a lease
		select {
		case <-d.slots:
		case <-ctx.Done():
			return
		}
		free := 1
	take:
		for free < total {
			select {
			case <-d.slots:
				free++
				continue
			default:
			}
			if free >= d.batch || len(d.queue) == 0 {
				break take
			}
			select {
			case <-d.slots:
				free++
			case <-d.notify:
				// new work while busy: keep batching, the queue still has jobs
			case <-ctx.Done():
				return
			}
		}
		if free = d.yield(free); free == 0 {
			if !sleep(ctx, yieldRecheck) {
				return
			}
			continue
		}
		gate := d.gate()
		// jobs just enqueued here are leased by name, with at most half the
		// free slots, unless other due jobs were found waiting
		var named []storage.Candidate
		var more bool
		if !d.peekFirst {
			named, more = d.takeHints(gate, max(1, free/2))
		}
		var jobs []*storage.Job
		var err error
		if len(named) > 0 {
			jobs, err = d.cfg.Store.LeaseNamed(ctx, time.Now(), named, d.cfg.Lease)
		} else {
			d.peekFirst = false
			jobs, err = d.cfg.Store.Lease(ctx, time.Now(), free, d.cfg.Lease, gate)
		}
		d.held.Add(int64(len(jobs)))
		if len(d.trialLanes) > 0 {
			// a half-open breaker's trial job: its other jobs are held
			// until it is tried
			for _, job := range jobs {
				if name, ok := d.trialLanes[storage.BaseLane(storage.LaneOf(&job.Event))]; ok {
					d.breakers.leaseTrial(name)
				}
			}
		}
		for range free - len(jobs) {
			d.slots <- struct{}{}
		}
		for _, job := range jobs {
			d.queue <- job // leased, even if the store also reported an error
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d.log.Error("leasing jobs", zap.Error(err), zap.Duration("retry_in", errDelay))
			if !sleep(ctx, errDelay) {
				return
			}
			errDelay = min(errDelay*2, 5*time.Second)
			continue
		}
		errDelay = 100 * time.Millisecond
		if len(named) > 0 && more {
			// more hints wait: a Lease next, which takes them and any
			// other due job in their turn
			d.peekFirst = true
			continue
		}
		if len(named) == 0 && len(jobs) == free {
			continue // there may be more due right now
		}
		wait := d.cfg.Idle
		if next, ok, err := d.cfg.Store.NextDue(ctx, gate); err == nil && ok {
			wait = min(max(time.Until(next), 0), wait)
		}
		if next, ok := d.breakers.NextTrial(); ok {
			// an open breaker's lanes are held: look again when it lets
			// its trial through
			wait = min(max(time.Until(next), time.Millisecond), wait)
		}
		if len(named) > 0 && wait == 0 {
			// other jobs are due: the next round looks for them first
			d.peekFirst = true
		}
		if wait == 0 && len(jobs) == 0 && len(named) == 0 {
			// due but not leasable (leased elsewhere this instant, or a
			// paced slot taken by another node): don't spin (a round by
			// name that found its jobs taken already goes on to a Lease)
			wait = 10 * time.Millisecond
		}
		t := time.NewTimer(wait)
		select {
		case <-d.notify:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		t.Stop()
	}
}

// yield is how many of the free slots the loop took it may lease now:
// all of them, unless ingest is busy (Config.Busy); then only as many as
// keep Yield jobs under lease, the others' slots going back.
func (d *Dispatcher) yield(free int) int {
	if d.cfg.Busy == nil || !d.cfg.Busy() {
		return free
	}
	room := max(d.cfg.Yield-int(d.held.Load()), 0)
	if room >= free {
		return free
	}
	for range free - room {
		d.slots <- struct{}{}
	}
	return room
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// pausedRecheck is how long a job of a source that is not gated (no
// longer configured) waits when handed back because its source is paused
// or its upstream's breaker is open (each look is a lease and a release).
const pausedRecheck = 15 * time.Second

// run delivers one leased job and records the outcome.
func (d *Dispatcher) run(job *storage.Job) {
	dest := storage.DestinationOf(&job.Event)
	target := d.target(job.Source, dest)
	gated := target != nil
	handBack := func(out storage.Outcome) {
		d.finish(job, out, Report{})
		if gated && d.breakers.endTrial(target.URL) {
			d.Notify() // it was a half-open breaker's trial: the next one goes now
		}
	}
	if d.paused(job.Source, dest) {
		// leased just before the pause: hand it back untouched
		handBack(storage.Outcome{Result: storage.Release, Due: d.waitDue(gated, pausedRecheck)})
		return
	}
	if d.tenantPaused(job.Source, job.Tenant) {
		// its tenant is paused: handed back into the tenant's own lane,
		// which the gate holds without holding back the other tenants of
		// its share (a replay's lane is no tenant's: looked at later)
		handBack(storage.Outcome{Result: storage.Release, Apart: true, Due: d.waitDue(gated && !job.Replay, pausedRecheck)})
		return
	}
	if target == nil {
		target = d.fallback(job)
	}
	out, rep := d.attempt(job, target, gated)
	d.record(job, out, rep)
}

// record has the store record a delivered job's outcome in the background,
// so that the worker takes its next job during the round trip or the
// shared fsync. The job's slot goes back at once (the worker is free), but
// the job stays under lease and counted as held (Busy's Yield) until its
// outcome is recorded, and Stop waits for it. At most Workers+Prefetch
// outcomes (and at most maxRecorders) are recorded at once: beyond that
// the worker waits.
//
// Many outcomes in flight is what makes the store's rounds large: on
// the embedded store, where every finish shares one synced transaction at
// a time, letting only Workers outcomes wait held the drain at Workers per
// one to two commits (see docs/benchmarks.md).
func (d *Dispatcher) record(job *storage.Job, out storage.Outcome, rep Report) {
	d.wg.Add(1) // the worker's own count is held: Stop's Wait has not returned
	d.outcomes <- outcome{job, out, rep}
	d.slots <- struct{}{}
}

// maxRecorders bounds the recorders of a dispatcher with many workers
// (workers goes up to 10,000): idle, each still holds a stack. 512 outcomes
// recorded at once fill the largest embedded round (maxGroup) and keep
// hundreds of Redis finishes in flight.
const maxRecorders = 512

// outcome is a delivered job's outcome on its way to a recorder.
type outcome struct {
	job *storage.Job
	out storage.Outcome
	rep Report
}

// recorder records the outcomes record hands it until the workers are gone.
func (d *Dispatcher) recorder() {
	for o := range d.outcomes {
		d.save(o.job, o.out, o.rep)
		d.held.Add(-1)
		d.wg.Done()
	}
}

// waitDue is when a job handed back because its lane must wait is due
// again: at once when the gate holds its lane back from now on (it is
// leased again as soon as the lane opens), else after wait.
func (d *Dispatcher) waitDue(gated bool, wait time.Duration) time.Time {
	if gated {
		return time.Time{}
	}
	return time.Now().Add(wait)
}

// finish records a job's outcome and then frees its slot.
func (d *Dispatcher) finish(job *storage.Job, out storage.Outcome, rep Report) {
	defer func() {
		d.held.Add(-1)
		d.slots <- struct{}{}
	}()
	d.save(job, out, rep)
}

// save records a job's outcome in the store, wakes the loop when the
// outcome makes a job due, and reports it (Config.OnResult).
func (d *Dispatcher) save(job *storage.Job, out storage.Outcome, rep Report) {
	// bookkeeping must not be cut short by Stop: its own bounded context
	fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := d.cfg.Store.Finish(fctx, job, out)
	switch {
	case errors.Is(err, storage.ErrLeaseLost):
		d.log.Warn("lease lost before the outcome was recorded; the job was leased again",
			zap.String("id", job.ID), zap.String("source", job.Source))
		return
	case err != nil:
		d.log.Error("recording delivery outcome; the job will be redelivered after its lease",
			zap.String("id", job.ID), zap.String("source", job.Source), zap.Error(err))
		return
	}
	if out.Result == storage.Retry || (out.Result == storage.Release && !out.Due.After(time.Now().Add(pausedRecheck/2))) ||
		(storage.ChainOf(&job.Event) != "" && storage.PopsChain(&job.Event, out.Result)) {
		// the loop may be sleeping past the new due time, or past the
		// next delivery of an ordered key, due now
		d.Notify()
	}
	if out.Result != storage.Release && d.cfg.OnResult != nil {
		rep.Error = out.Error
		d.cfg.OnResult(rep)
	}
}

// attempt makes one delivery attempt (unless the breaker says not now)
// and decides the outcome.
func (d *Dispatcher) attempt(job *storage.Job, t *Target, gated bool) (storage.Outcome, Report) {
	rep := Report{Job: job, Upstream: t.URL}
	defer func() {
		// tried or handed back: no trial leased any more; a trial that
		// closed its breaker lets the backlog behind it go now, not at the
		// lease loop's next idle tick
		if d.breakers.endTrial(t.URL) && d.breakers.closed(t.URL) {
			d.Notify()
		}
	}()
	// a prefetched job may have waited for a worker: if its lease could
	// run out during the attempt, hand it back rather than risk another
	// worker delivering it at the same time
	if time.Until(job.LeaseUntil) < t.Timeout+AttemptMargin(t.Timeout, d.cfg.Lease) {
		return storage.Outcome{Result: storage.Release}, rep
	}
	if job.EventID != "" && !dedupe.Printable(job.EventID) {
		// ids are normalized where they are found (dedupe.Normalize, the
		// id_from rules): only another writer stores one that cannot
		// travel in a header, and no attempt would ever carry it (nor
		// should the upstream's breaker count it)
		rep.Result = storage.Dead
		return storage.Outcome{Result: storage.Dead, Error: "permanent failure: the stored event id cannot be sent in a header (not written by hookline's ingress)"}, rep
	}
	cb := d.breakers.get(t.URL)
	var status int
	var hdr http.Header
	start := time.Now()
	var derr error
	_, err := cb.Execute(func() (int, error) {
		status, hdr, derr = d.send(job, t)
		if Classify(status, derr) == Transient {
			return 0, errTransient
		}
		return 0, nil
	})
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		// the upstream is known to be down: wait without using an attempt
		return storage.Outcome{Result: storage.Release, Due: d.waitDue(gated, d.breakers.open/2)}, rep
	}
	if d.deliverCtx.Err() != nil && derr != nil {
		// shutting down cut the attempt short: not the upstream's fault
		return storage.Outcome{Result: storage.Release}, rep
	}
	now := time.Now()
	att := &storage.Attempt{N: len(job.Attempts) + 1, At: start, Status: status, Duration: now.Sub(start)}
	class := Classify(status, derr)
	switch {
	case derr != nil:
		att.Error = Describe(derr)
	case class != Success:
		att.Error = "upstream answered " + strconv.Itoa(status) + " " + http.StatusText(status)
	}
	rep.Attempt, rep.Class = att, class
	fields := []zap.Field{
		zap.String("id", job.ID), zap.String("event_id", job.EventID), zap.String("source", job.Source),
		zap.Int("attempt", att.N), zap.Int("status", status), zap.Duration("duration", att.Duration),
	}
	switch class {
	case Success:
		rep.Result = storage.Delivered
		d.log.Debug("delivered", fields...)
		return storage.Outcome{Result: storage.Delivered, Attempt: att}, rep
	case Permanent:
		rep.Result = storage.Dead
		d.log.Warn("permanent delivery failure, moved to the DLQ", append(fields, zap.String("error", att.Error))...)
		return storage.Outcome{Result: storage.Dead, Attempt: att, Error: "permanent failure: " + att.Error}, rep
	}
	if job.RoundAttempts()+1 >= t.Policy.MaxAttempts {
		rep.Result = storage.Dead
		d.log.Warn("delivery attempts exhausted, moved to the DLQ", append(fields, zap.String("error", att.Error))...)
		return storage.Outcome{Result: storage.Dead, Attempt: att,
			Error: fmt.Sprintf("gave up after %d attempts: %s", job.RoundAttempts()+1, att.Error)}, rep
	}
	delay := t.Policy.Delay(job.RoundAttempts()+1, rand.Float64)
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		if ra, ok := RetryAfter(hdr, now); ok {
			delay = ra
		}
	}
	rep.Result = storage.Retry
	d.log.Info("transient delivery failure, will retry",
		append(fields, zap.String("error", att.Error), zap.Duration("retry_in", delay))...)
	return storage.Outcome{Result: storage.Retry, Attempt: att, Due: now.Add(delay)}, rep
}

var errTransient = errors.New("transient upstream failure")

// send POSTs the job to the upstream and returns the status and headers.
func (d *Dispatcher) send(job *storage.Job, t *Target) (int, http.Header, error) {
	ctx, cancel := context.WithTimeout(d.deliverCtx, t.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(job.Body))
	if err != nil {
		return 0, nil, err
	}
	for k, vv := range job.Headers {
		if k == "Content-Length" {
			continue
		}
		req.Header[k] = vv
	}
	req.Header.Set("Webhook-Id", job.EventID) // normalized where it was found (attempt checks)
	req.Header.Set("X-Webhook-Source", job.Source)
	req.Header.Set("X-Webhook-Destination", storage.DestinationOf(&job.Event))
	if job.Type != "" {
		req.Header.Set("X-Webhook-Event-Type", job.Type)
	} else {
		req.Header.Del("X-Webhook-Event-Type") // never one the provider sent
	}
	if job.Tenant != "" {
		req.Header.Set("X-Webhook-Tenant", job.Tenant)
	} else {
		req.Header.Del("X-Webhook-Tenant")
	}
	req.Header.Set("X-Webhook-Attempt", strconv.Itoa(len(job.Attempts)+1))
	req.Header.Set("X-Webhook-Received-At", job.ReceivedAt.UTC().Format(time.RFC3339))
	if t.Signer != nil {
		t.Signer.Sign(req.Header, req.Header.Get("Webhook-Id"), job.Body, time.Now())
	}
	client, traced := d.clients(t)
	ctx, span := d.startAttempt(ctx, job)
	if span != nil {
		client, req = traced, req.WithContext(ctx)
	}
	resp, err := client.Do(req)
	if err != nil {
		endAttempt(span, 0, err)
		return 0, nil, err
	}
	endAttempt(span, resp.StatusCode, nil)
	// drain a little so the connection can be reused; never log it
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, resp.Header, nil
}

// Describe is an HTTP request error's text without the URL (it may carry credentials).
func Describe(err error) string {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout waiting for the upstream"
	}
	return err.Error()
}
