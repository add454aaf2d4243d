package ingress

import (
	"fmt"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// Defaults of the signature-failure guard.
const (
	DefaultBlockFailures = 20
	DefaultBlockWindow   = time.Minute
	DefaultBlockCooldown = 5 * time.Minute
	// guardMaxClients bounds the guard's memory under a spray of source IPs.
	guardMaxClients = 100_000
)

// guardSettings are the thresholds of a source's guard, compiled from
// its BlockConfig.
type guardSettings struct {
	failures         int
	window, cooldown time.Duration
}

// guard counts signature failures per client IP in fixed windows.
type guard struct {
	failures int
	window   time.Duration
	cooldown time.Duration

	mu        sync.Mutex
	clients   map[string]*clientFailures
	lastSweep time.Time
}

type clientFailures struct {
	windowStart  time.Time
	count        int
	blockedUntil time.Time
}

func newGuard(failures int, window, cooldown time.Duration) *guard {
	return &guard{failures: failures, window: window, cooldown: cooldown, clients: make(map[string]*clientFailures)}
}

// guardPool shares each source's guard across config reloads, so that a
// reload does not lift the blocks in force. It is keyed by the source name
// and the guard's settings: changed settings get a fresh guard.
var guardPool = caddy.NewUsagePool()

// guardKey is the pool key of a source's guard.
func guardKey(source string, s guardSettings) string {
	return fmt.Sprintf("guard|%s|%d|%s|%s", source, s.failures, s.window, s.cooldown)
}

// acquireGuard takes a reference on the source's shared guard; the caller
// releases it with guardPool.Delete(key).
func acquireGuard(source string, s guardSettings) (*guard, string, error) {
	key := guardKey(source, s)
	v, _, err := guardPool.LoadOrNew(key, func() (caddy.Destructor, error) {
		return newGuard(s.failures, s.window, s.cooldown), nil
	})
	if err != nil {
		return nil, "", err
	}
	return v.(*guard), key, nil
}

// Destruct implements caddy.Destructor: a guard holds only memory.
func (g *guard) Destruct() error { return nil }

// blocked reports whether ip is cooling down, and for how long still.
func (g *guard) blocked(ip string, now time.Time) (time.Duration, bool) {
	if g == nil {
		return 0, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.clients[ip]
	if !ok || !c.blockedUntil.After(now) {
		return 0, false
	}
	return c.blockedUntil.Sub(now), true
}

// fail records a failed verification from ip; it returns true when this
// failure starts a cool-down.
func (g *guard) fail(ip string, now time.Time) bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sweep(now)
	c, ok := g.clients[ip]
	if !ok {
		if len(g.clients) >= guardMaxClients {
			return false // full of attackers already blocked or counting: fail open, don't grow
		}
		c = &clientFailures{windowStart: now}
		g.clients[ip] = c
	}
	if now.Sub(c.windowStart) >= g.window {
		c.windowStart, c.count = now, 0
	}
	c.count++
	if c.count >= g.failures && !c.blockedUntil.After(now) {
		c.blockedUntil = now.Add(g.cooldown)
		c.windowStart, c.count = now, 0
		return true
	}
	return false
}

// sweep forgets clients whose window and cool-down are over.
func (g *guard) sweep(now time.Time) {
	if now.Sub(g.lastSweep) < g.window {
		return
	}
	g.lastSweep = now
	for ip, c := range g.clients {
		if now.Sub(c.windowStart) >= g.window && !c.blockedUntil.After(now) {
			delete(g.clients, ip)
		}
	}
}
