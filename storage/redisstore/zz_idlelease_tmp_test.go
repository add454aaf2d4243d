package redisstore_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/storagetest"
)

func BenchmarkIdleLeaseTmp(b *testing.B) {
	srv := redistest.Start(b)
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}, PoolSize: 64})
	st := redisstore.New(c, redisstore.Options{Prefix: redistest.Prefix()})
	defer st.Close()
	ctx := b.Context()
	var lease, next, fin []time.Duration
	for i := 0; b.Loop(); i++ {
		ev := storagetest.NewEvent("stripe", "evt_idle_"+strconv.Itoa(i))
		if _, err := st.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		jobs, err := st.Lease(ctx, time.Now(), 80, time.Minute, nil)
		t1 := time.Now()
		if err != nil || len(jobs) != 1 {
			b.Fatal(len(jobs), err)
		}
		_, _, _ = st.NextDue(ctx, nil)
		t2 := time.Now()
		_ = st.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Delivered})
		t3 := time.Now()
		lease, next, fin = append(lease, t1.Sub(t0)), append(next, t2.Sub(t1)), append(fin, t3.Sub(t2))
	}
	for _, x := range []struct {
		n string
		d []time.Duration
	}{{"lease", lease}, {"nextdue", next}, {"finish", fin}} {
		slices.Sort(x.d)
		b.ReportMetric(float64(x.d[len(x.d)/2].Microseconds()), x.n+"-p50-µs")
		b.ReportMetric(float64(x.d[len(x.d)*99/100].Microseconds()), x.n+"-p99-µs")
	}
}
