package storagemodules

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/hookline/hookline/internal/caddyfileopt"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/spool"
)

func init() {
	caddy.RegisterModule(RedisStorage{})
}

// RedisStorage keeps events in Redis, so that several Caddy instances
// share the queue: single node, Sentinel or Cluster (go-redis
// UniversalClient). See docs/redis.md for durability settings. Caddyfile
// syntax: see UnmarshalCaddyfile. String fields may hold placeholders
// ({env.*}, {file.*}), resolved at provision.
type RedisStorage struct {
	// Addresses are the Redis nodes, host:port or redis:// / rediss:// URLs
	// (a URL may carry user, password and db); several mean Cluster seed
	// nodes (default 127.0.0.1:6379).
	Addresses []string `json:"addresses,omitempty"`
	// Cluster selects Redis Cluster even with a single address.
	Cluster bool `json:"cluster,omitempty"`
	// SentinelMaster is the master name of a Redis Sentinel setup, which
	// then uses SentinelAddresses.
	SentinelMaster string `json:"sentinel_master,omitempty"`
	// SentinelAddresses are the Sentinel nodes (host:port).
	SentinelAddresses []string `json:"sentinel_addresses,omitempty"`
	// SentinelPassword authenticates to the Sentinel nodes.
	SentinelPassword string `json:"sentinel_password,omitempty"`
	// Username authenticates to Redis (ACL user; default: the URL's).
	Username string `json:"username,omitempty"`
	// Password authenticates to Redis (default: the URL's).
	Password string `json:"password,omitempty"`
	// DB is the database number (default: the URL's, else 0).
	DB int `json:"db,omitempty"`
	// TLS connects with TLS (as a rediss:// address does).
	TLS bool `json:"tls,omitempty"`
	// TLSServerName is the name the server's certificate is checked against.
	TLSServerName string `json:"tls_server_name,omitempty"`
	// TLSInsecureSkipVerify accepts any server certificate (unsafe: for
	// tests).
	TLSInsecureSkipVerify bool `json:"tls_insecure_skip_verify,omitempty"`
	// KeyPrefix starts every key hookline writes (default "hookline").
	KeyPrefix string `json:"key_prefix,omitempty"`
	// Partitions is the number of hash-tagged partitions (default 16, at
	// most 1024); it must not change while events are stored.
	Partitions int `json:"partitions,omitempty"`
	// MinReplicas, when positive, makes every acknowledged write wait
	// until that many replicas have it (not with Cluster).
	MinReplicas int `json:"min_replicas,omitempty"`
	// WaitTimeout bounds the wait for MinReplicas (default 1s); fewer
	// replicas by then fail the write (the ingress answers 503).
	WaitTimeout caddy.Duration `json:"wait_timeout,omitempty"`
	// DialTimeout bounds connecting to a node (default 2s).
	DialTimeout caddy.Duration `json:"dial_timeout,omitempty"`
	// PoolSize is the connection pool size per node (default: go-redis's,
	// 10 per CPU).
	PoolSize int `json:"pool_size,omitempty"`
	// Spool, when set, keeps on this node's disk, fsynced, the events
	// Redis cannot take while it is unreachable, answers them as accepted,
	// and moves them into Redis once it answers again (storage/spool).
	Spool *SpoolConfig `json:"spool,omitempty"`

	// compiled by Provision
	opts  *redis.UniversalOptions
	store redisstore.Options
	log   *zap.Logger
}

// SpoolConfig is the Redis store's local spool.
type SpoolConfig struct {
	// Path is the spool's directory, which may hold placeholders
	// (default: hookline/spool-<key_prefix>.db under Caddy's data
	// directory). One process at a time may use it: a second one fails
	// to start, naming it.
	Path string `json:"path,omitempty"`
	// MaxSize caps the bytes of the events spooled (default 1GiB); an
	// event beyond it is answered 503, as without a spool.
	MaxSize int64 `json:"max_size,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (RedisStorage) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "webhooks.storage.redis",
		New: func() caddy.Module { return new(RedisStorage) },
	}
}

// Provision resolves placeholders ({env.*}, {file.*}) and builds the
// client options; it connects to nothing.
func (s *RedisStorage) Provision(ctx caddy.Context) error {
	s.log = ctx.Logger()
	repl := caddy.NewReplacer()
	resolve := func(v string) string { return repl.ReplaceAll(v, "") }
	opts := &redis.UniversalOptions{
		Username:         resolve(s.Username),
		Password:         resolve(s.Password),
		SentinelPassword: resolve(s.SentinelPassword),
		DB:               s.DB,
		MasterName:       resolve(s.SentinelMaster),
		IsClusterMode:    s.Cluster,
		DialTimeout:      2 * time.Second,
		// fail fast when Redis is down: the ingress answers 503 and the
		// provider retries, instead of holding its request open
		MaxRetries:         1,
		MinRetryBackoff:    50 * time.Millisecond,
		DialerRetries:      1,
		DialerRetryTimeout: 50 * time.Millisecond,
		ReadTimeout:        3 * time.Second,
		WriteTimeout:       3 * time.Second,
		PoolSize:           s.PoolSize,
	}
	if s.DialTimeout > 0 {
		opts.DialTimeout = time.Duration(s.DialTimeout)
	}
	useTLS := s.TLS
	addrs := s.Addresses
	if opts.MasterName != "" {
		addrs = s.SentinelAddresses
	}
	for _, a := range addrs {
		a = resolve(a)
		if !strings.Contains(a, "://") {
			opts.Addrs = append(opts.Addrs, a)
			continue
		}
		u, err := redis.ParseURL(a)
		if err != nil {
			// the URL may carry a password: never echo it
			return fmt.Errorf("storage redis: malformed redis URL in address %d", len(opts.Addrs)+1)
		}
		opts.Addrs = append(opts.Addrs, u.Addr)
		if opts.Username == "" {
			opts.Username = u.Username
		}
		if opts.Password == "" {
			opts.Password = u.Password
		}
		if s.DB == 0 {
			opts.DB = u.DB
		}
		if u.TLSConfig != nil {
			useTLS = true
		}
	}
	if len(opts.Addrs) == 0 {
		opts.Addrs = []string{"127.0.0.1:6379"}
	}
	if useTLS {
		opts.TLSConfig = &tls.Config{
			MinVersion:         tls.VersionTLS12,
			ServerName:         s.TLSServerName,
			InsecureSkipVerify: s.TLSInsecureSkipVerify, //nolint:gosec // the user's explicit choice
		}
	}
	s.opts = opts
	s.store = redisstore.Options{
		Prefix:      s.prefix(),
		Partitions:  s.Partitions,
		MinReplicas: s.MinReplicas,
		WaitTimeout: time.Duration(s.WaitTimeout),
		Log:         s.log,
	}
	if s.Spool != nil {
		s.Spool.Path = resolve(s.Spool.Path)
		if s.Spool.Path == "" {
			s.Spool.Path = filepath.Join(caddy.AppDataDir(), "hookline", "spool-"+s.prefix()+".db")
		}
		abs, err := filepath.Abs(s.Spool.Path)
		if err != nil {
			return fmt.Errorf("storage redis: spool path: %v", err)
		}
		s.Spool.Path = abs
	}
	return nil
}

// Validate checks the settings.
func (s *RedisStorage) Validate() error {
	if s.DB < 0 || s.Partitions < 0 || s.MinReplicas < 0 || s.PoolSize < 0 {
		return fmt.Errorf("storage redis: db, partitions, min_replicas and pool_size must not be negative")
	}
	if s.Partitions > 1024 {
		return fmt.Errorf("storage redis: at most 1024 partitions")
	}
	if s.Spool != nil && s.Spool.MaxSize < 0 {
		return fmt.Errorf("storage redis: spool max_size must not be negative")
	}
	if s.SentinelMaster != "" && len(s.SentinelAddresses) == 0 {
		return fmt.Errorf("storage redis: sentinel needs at least one address")
	}
	if s.MinReplicas > 0 && s.opts != nil && s.opts.MasterName == "" && (s.opts.IsClusterMode || len(s.opts.Addrs) > 1) {
		// WAIT must run on the connection of the write; go-redis's cluster
		// pipelines do not guarantee that
		return fmt.Errorf("storage redis: min_replicas is not supported with Redis Cluster yet")
	}
	return nil
}

// Key implements Backend: configs with the same resolved settings share
// one client; any change (TLS, timeouts, pool size...) makes a new one.
func (s *RedisStorage) Key() string {
	addrs := slices.Clone(s.opts.Addrs)
	slices.Sort(addrs)
	tlsSettings := ""
	if s.opts.TLSConfig != nil {
		tlsSettings = fmt.Sprintf("tls:%s:%v", s.opts.TLSConfig.ServerName, s.opts.TLSConfig.InsecureSkipVerify)
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{
		strings.Join(addrs, ","), s.opts.MasterName, strconv.Itoa(s.opts.DB), s.opts.Username,
		s.opts.Password, s.opts.SentinelPassword, s.store.Prefix, strconv.Itoa(s.store.Partitions),
		strconv.Itoa(s.store.MinReplicas), s.store.WaitTimeout.String(), strconv.FormatBool(s.opts.IsClusterMode || len(addrs) > 1),
		tlsSettings, s.opts.DialTimeout.String(), strconv.Itoa(s.opts.PoolSize), s.spoolKey(),
	}, "\x00")))
	return "redis:" + hex.EncodeToString(sum[:])
}

// spoolKey is the spool's part of Key: a store with another spool (or
// none) is another store.
func (s *RedisStorage) spoolKey() string {
	if s.Spool == nil {
		return ""
	}
	return "spool:" + s.Spool.Path // max_size applies when the spool is opened
}

// Describe implements Backend (addresses and prefix only, no credentials).
func (s *RedisStorage) Describe() string {
	d := "redis " + strings.Join(s.opts.Addrs, ",") + " prefix " + s.store.Prefix
	if s.opts.MasterName != "" {
		d += " sentinel master " + s.opts.MasterName
	}
	return d
}

func (s *RedisStorage) prefix() string {
	if s.KeyPrefix == "" {
		return redisstore.DefaultPrefix
	}
	return s.KeyPrefix
}

// Open implements Backend. It checks at once, within a second, that the
// store at the key prefix was created with the configured number of
// partitions (a *redisstore.LayoutError otherwise: the queued events would
// be orphaned), but does not wait for Redis: when Redis is down the check
// is made on first use, the ingress answers 503 and the workers back off
// until it returns.
func (s *RedisStorage) Open() (storage.Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := redisstore.Open(ctx, redis.NewUniversalClient(s.opts), s.store)
	if err != nil {
		return nil, err // not a nil *Store in an interface
	}
	if s.Spool == nil {
		return st, nil
	}
	sp, release, err := openSpool(s.Spool.Path, s.Spool.MaxSize)
	if err != nil {
		st.Close()
		return nil, err
	}
	log := s.log
	if log == nil {
		log = zap.NewNop()
	}
	return spool.NewStore(st, sp, spool.StoreOptions{Log: log.Named("spool"), CloseSpool: release}), nil
}

// spools are the open spools by directory. A reload that changes a
// Redis setting (a rotated password) opens a new store while the old
// config's still runs: both share the spool, which one process may open
// once, and its last user closes it.
var spools = caddy.NewUsagePool()

// openedSpool is a pooled spool.
type openedSpool struct{ *spool.Spool }

// Destruct implements caddy.Destructor.
func (o openedSpool) Destruct() error { return o.Close() }

// openSpool opens the spool at path, or shares the one open there (its
// max_size is the one it was opened with); release gives it back.
func openSpool(path string, maxSize int64) (*spool.Spool, func() error, error) {
	v, _, err := spools.LoadOrNew(path, func() (caddy.Destructor, error) {
		sp, err := spool.Open(path, spool.Options{MaxSize: maxSize})
		if err != nil {
			return nil, err
		}
		return openedSpool{sp}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	var once sync.Once
	release := func() error {
		var err error
		once.Do(func() { _, err = spools.Delete(path) })
		return err
	}
	return v.(openedSpool).Spool, release, nil
}

// UnmarshalCaddyfile sets up the backend from Caddyfile tokens. Syntax:
//
//	storage redis [<address>] {
//		address redis://[user:pass@]127.0.0.1:6379/0   # repeatable; rediss:// for TLS
//		addresses <host:port>...                       # Cluster seed nodes
//		cluster                                        # Cluster mode with a single address
//		sentinel <master_name> <addr>...               # Redis Sentinel
//		sentinel_password <password>
//		username <user>
//		password <password>
//		db <n>
//		tls
//		tls_server_name <name>
//		tls_insecure_skip_verify
//		key_prefix hookline
//		partitions 16
//		min_replicas <n> [<timeout>]                   # WAIT for n replicas before every 202
//		dial_timeout 2s
//		pool_size <n>
//		spool [<path>] {                               # accept while Redis is unreachable
//			max_size 1GiB
//		}
//	}
func (s *RedisStorage) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // "redis"
	if d.NextArg() {
		s.Addresses = append(s.Addresses, d.Val())
		if d.NextArg() {
			return d.ArgErr()
		}
	}
	// the options of one shape, each read into its field
	flags := map[string]*bool{"cluster": &s.Cluster, "tls": &s.TLS, "tls_insecure_skip_verify": &s.TLSInsecureSkipVerify}
	words := map[string]*string{"sentinel_password": &s.SentinelPassword, "username": &s.Username,
		"password": &s.Password, "tls_server_name": &s.TLSServerName, "key_prefix": &s.KeyPrefix}
	counts := map[string]*int{"db": &s.DB, "partitions": &s.Partitions, "pool_size": &s.PoolSize}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		opt := d.Val()
		if f, ok := flags[opt]; ok {
			if d.NextArg() {
				return d.ArgErr()
			}
			*f = true
			continue
		}
		if w, ok := words[opt]; ok {
			v, err := caddyfileopt.OneArg(d)
			if err != nil {
				return err
			}
			*w = v
			continue
		}
		if c, ok := counts[opt]; ok {
			n, err := caddyfileopt.Int(d, 0)
			if err != nil {
				return err
			}
			*c = n
			continue
		}
		switch opt {
		case "address":
			a, err := caddyfileopt.OneArg(d)
			if err != nil {
				return err
			}
			s.Addresses = append(s.Addresses, a)
		case "addresses":
			args := d.RemainingArgs()
			if len(args) == 0 {
				return d.ArgErr()
			}
			s.Addresses = append(s.Addresses, args...)
		case "sentinel":
			args := d.RemainingArgs()
			if len(args) < 2 {
				return d.Errf("sentinel <master_name> <addr>...")
			}
			s.SentinelMaster, s.SentinelAddresses = args[0], args[1:]
		case "min_replicas":
			args := d.RemainingArgs()
			if len(args) < 1 || len(args) > 2 {
				return d.ArgErr()
			}
			n, err := caddyfileopt.IntArg(d, opt, args[0], 0)
			if err != nil {
				return err
			}
			s.MinReplicas = n
			if len(args) == 2 {
				dur, ok := caddyfileopt.PositiveDuration(args[1])
				if !ok {
					return d.Errf("min_replicas: invalid timeout %q", args[1])
				}
				s.WaitTimeout = caddy.Duration(dur)
			}
		case "dial_timeout":
			dur, err := caddyfileopt.Duration(d, false)
			if err != nil {
				return err
			}
			s.DialTimeout = dur
		case "spool":
			if err := s.unmarshalSpool(d); err != nil {
				return err
			}
		default:
			return d.Errf("unrecognized storage redis option %q", opt)
		}
	}
	return nil
}

// unmarshalSpool reads `spool [<path>] [{ max_size <size> }]`.
func (s *RedisStorage) unmarshalSpool(d *caddyfile.Dispenser) error {
	if s.Spool != nil {
		return d.Err("spool: given twice")
	}
	s.Spool = &SpoolConfig{}
	if d.NextArg() {
		s.Spool.Path = d.Val()
	}
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "max_size":
			n, err := caddyfileopt.Size(d, "spool max_size", 1, 1<<50)
			if err != nil {
				return err
			}
			s.Spool.MaxSize = n
		default:
			return d.Errf("unrecognized spool option %q", d.Val())
		}
	}
	return nil
}

// Interface guards
var (
	_ caddy.Provisioner     = (*RedisStorage)(nil)
	_ caddy.Validator       = (*RedisStorage)(nil)
	_ caddyfile.Unmarshaler = (*RedisStorage)(nil)
	_ Backend               = (*RedisStorage)(nil)
)
