package storagemodules

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/spool"
)

func TestRedisStorageProvision(t *testing.T) {
	t.Setenv("HL_TEST_REDIS_PW", "s3cret")
	tests := []struct {
		name      string
		in        string
		addrs     string
		user, pw  string
		db        int
		master    string
		tls       bool
		cluster   bool
		wantErr   string
		sameKeyAs string
	}{
		{name: "default", in: "redis", addrs: "127.0.0.1:6379"},
		{name: "url", in: "redis redis://u:p@10.0.0.1:6380/3", addrs: "10.0.0.1:6380", user: "u", pw: "p", db: 3},
		{name: "rediss", in: "redis rediss://10.0.0.1:6380", addrs: "10.0.0.1:6380", tls: true},
		{name: "explicit beats url", in: "redis {\naddress redis://u:p@h:1/3\npassword {env.HL_TEST_REDIS_PW}\ndb 5\n}", addrs: "h:1", user: "u", pw: "s3cret", db: 5},
		{name: "cluster seeds", in: "redis {\naddresses a:7000 b:7001 c:7002\n}", addrs: "a:7000,b:7001,c:7002", cluster: true},
		{name: "cluster one address", in: "redis {\naddress a:7000\ncluster\n}", addrs: "a:7000", cluster: true},
		{name: "sentinel", in: "redis {\nsentinel mymaster s1:26379 s2:26379\n}", addrs: "s1:26379,s2:26379", master: "mymaster"},
		{name: "bad url", in: "redis redis://u:pw@h:notaport/x", wantErr: "malformed redis URL"},
		{name: "bad url never echoes the password", in: "redis redis://u:topsecret@h:notaport/x", wantErr: "address 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := new(RedisStorage)
			if err := s.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.in)); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			err := s.Provision(testContext(t))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "topsecret") {
					t.Fatalf("error %v, want one containing %q and no password", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			o := s.opts
			if got := strings.Join(o.Addrs, ","); got != tc.addrs {
				t.Errorf("addrs %q, want %q", got, tc.addrs)
			}
			if o.Username != tc.user || o.Password != tc.pw || o.DB != tc.db || o.MasterName != tc.master {
				t.Errorf("user %q pw %q db %d master %q", o.Username, o.Password, o.DB, o.MasterName)
			}
			if (o.TLSConfig != nil) != tc.tls {
				t.Errorf("tls %v, want %v", o.TLSConfig != nil, tc.tls)
			}
			if got := o.IsClusterMode || (len(o.Addrs) > 1 && o.MasterName == ""); got != tc.cluster {
				t.Errorf("cluster %v, want %v", got, tc.cluster)
			}
			if strings.Contains(s.Key(), "s3cret") || strings.Contains(s.Key(), ":p@") ||
				strings.Contains(s.Describe(), "s3cret") || strings.Contains(s.Describe(), ":p@") {
				t.Errorf("pool key or description holds a password: %s / %s", s.Key(), s.Describe())
			}
		})
	}
}

func TestRedisStorageKeyDistinguishesData(t *testing.T) {
	key := func(in string) string {
		s := new(RedisStorage)
		if err := s.UnmarshalCaddyfile(caddyfile.NewTestDispenser(in)); err != nil {
			t.Fatal(err)
		}
		if err := s.Provision(testContext(t)); err != nil {
			t.Fatal(err)
		}
		return s.Key()
	}
	base := key("redis {\naddress h:1\n}")
	if base != key("redis redis://h:1/0") {
		t.Error("the same server and db give different keys")
	}
	for _, other := range []string{
		"redis {\naddress h:2\n}",
		"redis {\naddress h:1\ndb 1\n}",
		"redis {\naddress h:1\nkey_prefix other\n}",
		"redis {\naddress h:1\npassword x\n}",
		"redis {\naddress h:1\npartitions 8\n}",
		"redis {\naddress h:1\ntls\n}",
		"redis {\naddress h:1\npool_size 7\n}",
		"redis {\naddress h:1\ndial_timeout 9s\n}",
		"redis {\naddress h:1\nspool\n}",
		"redis {\naddress h:1\nspool /var/spool/hl\n}",
	} {
		if key(other) == base {
			t.Errorf("%q shares the key of the base config", other)
		}
	}
}

func testContext(t *testing.T) caddy.Context {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	return ctx
}

// TestRedisStorageDurationsAcceptCaddyStrings: the durations of the JSON
// config take Caddy duration strings as well as nanoseconds, and both
// provision to the same client and store options.
func TestRedisStorageDurationsAcceptCaddyStrings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		config  string // %s for the duration
		ns, str string
		get     func(s *RedisStorage) time.Duration
		want    time.Duration
	}{
		{name: "dial_timeout", config: `{"dial_timeout":%s}`, ns: "5000000000", str: `"5s"`,
			get: func(s *RedisStorage) time.Duration { return s.opts.DialTimeout }, want: 5 * time.Second},
		{name: "wait_timeout", config: `{"min_replicas":1,"wait_timeout":%s}`, ns: "250000000", str: `"250ms"`,
			get: func(s *RedisStorage) time.Duration { return s.store.WaitTimeout }, want: 250 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var keys []string
			for _, v := range []string{tc.ns, tc.str} {
				mod, err := testContext(t).LoadModuleByID("webhooks.storage.redis", json.RawMessage(strings.Replace(tc.config, "%s", v, 1)))
				if err != nil {
					t.Fatalf("%s: %v", v, err)
				}
				s := mod.(*RedisStorage)
				if got := tc.get(s); got != tc.want {
					t.Errorf("%s: got %v, want %v", v, got, tc.want)
				}
				keys = append(keys, s.Key())
			}
			if keys[0] != keys[1] {
				t.Errorf("the two configs have different pool keys: %v", keys)
			}
		})
	}
}

// TestRedisStorageSpool: `spool [<path>] [{ max_size <size> }]` in the
// Caddyfile, its default path (by key prefix, under Caddy's data
// directory), and its errors.
func TestRedisStorageSpool(t *testing.T) {
	tests := []struct {
		name, in  string
		wantPath  string // "" with no error: no spool
		wantMax   int64
		wantErr   string
		defaulted bool
	}{
		{name: "none", in: "redis"},
		{name: "bare", in: "redis {\nspool\n}", defaulted: true, wantPath: "spool-hookline.db"},
		{name: "prefix names the default", in: "redis {\nkey_prefix acme\nspool\n}", defaulted: true, wantPath: "spool-acme.db"},
		{name: "path", in: "redis {\nspool /var/spool/hl\n}", wantPath: "/var/spool/hl"},
		{name: "max_size", in: "redis {\nspool /s {\nmax_size 64MiB\n}\n}", wantPath: "/s", wantMax: 64 << 20},
		{name: "block without path", in: "redis {\nspool {\nmax_size 1GB\n}\n}", defaulted: true, wantPath: "spool-hookline.db", wantMax: 1e9},
		{name: "two paths", in: "redis {\nspool /a /b\n}", wantErr: "wrong argument count"},
		{name: "twice", in: "redis {\nspool /a\nspool /b\n}", wantErr: "spool: given twice"},
		{name: "bad size", in: "redis {\nspool {\nmax_size lots\n}\n}", wantErr: `spool max_size: invalid size "lots"`},
		{name: "zero size", in: "redis {\nspool {\nmax_size 0\n}\n}", wantErr: "spool max_size: invalid size"},
		{name: "unknown option", in: "redis {\nspool {\npath /x\n}\n}", wantErr: `unrecognized spool option "path"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := new(RedisStorage)
			err := s.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Provision(testContext(t)); err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			if tc.wantPath == "" {
				if s.Spool != nil {
					t.Fatalf("spool %+v, want none", s.Spool)
				}
				return
			}
			want := tc.wantPath
			if tc.defaulted {
				want = filepath.Join(caddy.AppDataDir(), "hookline", tc.wantPath)
			}
			if s.Spool == nil || s.Spool.Path != want || s.Spool.MaxSize != tc.wantMax {
				t.Fatalf("spool %+v, want path %s, max %d", s.Spool, want, tc.wantMax)
			}
		})
	}
}

// TestRedisStorageSpoolOpen: a store with a spool opens (Redis down or
// not: nothing is dialled) with its spool locked; a second store of the
// process on it (a reload's) shares it, another opener (as a second
// process) fails naming it, and the last store to close closes it.
func TestRedisStorageSpoolOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	open := func() (storage.Store, error) {
		s := new(RedisStorage)
		in := "redis 127.0.0.1:1 {\nspool " + dir + "\n}"
		if err := s.UnmarshalCaddyfile(caddyfile.NewTestDispenser(in)); err != nil {
			t.Fatal(err)
		}
		if err := s.Provision(testContext(t)); err != nil {
			t.Fatal(err)
		}
		return s.Open()
	}
	st, err := open()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.(*spool.Store); !ok {
		t.Fatalf("Open gave a %T, want the spooling store", st)
	}
	// a second store of this process (a reload's new config) shares it
	st2, err := open()
	if err != nil {
		t.Fatalf("a second store on the spool in the same process: %v", err)
	}
	if st2.(*spool.Store).Spool() != st.(*spool.Store).Spool() {
		t.Fatal("the two stores opened the spool twice")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// still open for the second; another process (a direct open) is refused
	if _, err := spool.Open(dir, spool.Options{}); err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("another open of a spool in use: %v, want an error naming %s", err, dir)
	}
	if err := st2.Close(); err != nil {
		t.Fatal(err)
	}
	sp, err := spool.Open(dir, spool.Options{})
	if err != nil {
		t.Fatalf("the spool once its last store closed: %v", err)
	}
	sp.Close()
}
