package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// CPUMeter measures what redis-server spends on a piece of work, for the
// benchmarks: Start resets its command stats and notes its CPU time; Stop
// reports its CPU per job (redis-cpu-µs/job, or Metric) and logs, with -v,
// what each command cost per job.
type CPUMeter struct {
	// Client reaches the server measured; it may be set anew for each
	// measurement.
	Client redis.UniversalClient
	// Metric names the CPU per job Stop reports ("": redis-cpu-µs/job).
	Metric string
	start  float64
}

// Start begins a measurement.
func (m *CPUMeter) Start(b *testing.B) {
	m.start = cpuSeconds(b, m.Client)
	_ = m.Client.ConfigResetStat(context.Background()).Err()
}

// Stop ends it, for jobs jobs.
func (m *CPUMeter) Stop(b *testing.B, jobs int) {
	metric := m.Metric
	if metric == "" {
		metric = "redis-cpu-µs/job"
	}
	b.ReportMetric((cpuSeconds(b, m.Client)-m.start)/float64(jobs)*1e6, metric)
	logCommands(b, m.Client, jobs)
}

// Around is Start (start true) and Stop for jobs jobs, in the form of
// drainbench.Benchmark's around.
func (m *CPUMeter) Around(jobs int) func(b *testing.B, start bool) {
	return func(b *testing.B, start bool) {
		if start {
			m.Start(b)
		} else {
			m.Stop(b, jobs)
		}
	}
}

// cpuSeconds is the CPU time (user and system) redis-server has used
// since it started (INFO cpu).
func cpuSeconds(b *testing.B, c redis.UniversalClient) float64 {
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\r\n") {
		k, v, _ := strings.Cut(line, ":")
		if k == "used_cpu_sys" || k == "used_cpu_user" {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}

// CommandStat is what redis-server has spent on one command since its
// stats were reset (INFO commandstats).
type CommandStat struct {
	Calls int64
	Usec  int64 // a script's time includes that of the commands it calls
}

// CommandStats reads INFO commandstats, by command name (lower case,
// subcommands as "config|resetstat").
func CommandStats(ctx context.Context, c redis.UniversalClient) (map[string]CommandStat, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]CommandStat{}
	for _, line := range strings.Split(info, "\r\n") {
		name, stats, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var st CommandStat
		for _, kv := range strings.Split(stats, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				st.Calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				st.Usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = st
	}
	return out, nil
}

// logCommands logs, with -v, what each command cost redis-server per job
// since the stats were reset: calls and microseconds.
func logCommands(b *testing.B, c redis.UniversalClient, jobs int) {
	stats, err := CommandStats(context.Background(), c)
	if err != nil {
		b.Fatal(err)
	}
	for name, st := range stats {
		calls, usec := float64(st.Calls), float64(st.Usec)
		b.Logf("%-22s %8.3f calls/job %7.1f µs/job %6.1f µs/call", name, calls/float64(jobs), usec/float64(jobs), usec/max(calls, 1))
	}
}

// UsedMemory is the memory redis-server holds, in bytes (INFO memory's
// used_memory).
func UsedMemory(ctx context.Context, c redis.UniversalClient) (int64, error) {
	info, err := c.InfoMap(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	v, ok := info["Memory"]["used_memory"]
	if !ok {
		return 0, fmt.Errorf("no used_memory in INFO memory")
	}
	return strconv.ParseInt(v, 10, 64)
}

// AOFSize is the size of redis-server's append-only file in bytes (INFO
// persistence's aof_current_size), and false when AOF is off.
func AOFSize(ctx context.Context, c redis.UniversalClient) (int64, bool, error) {
	info, err := c.InfoMap(ctx, "persistence").Result()
	if err != nil {
		return 0, false, err
	}
	p := info["Persistence"]
	if p["aof_enabled"] != "1" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(p["aof_current_size"], 10, 64)
	return n, err == nil, err
}

// AOF is the arguments that give a server started by Start the
// persistence the store's users run (an append-only file, fsync every
// second) with the file's automatic rewrites off, so that AOFSize only
// grows while a benchmark measures it.
var AOF = []string{"--appendonly", "yes", "--appendfsync", "everysec", "--auto-aof-rewrite-percentage", "0"}
