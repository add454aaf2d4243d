package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// CPUMeter measures what redis-server spends on a piece of work, for the
// benchmarks: Start resets its command stats and notes its CPU time; Stop
// reports its CPU per job (redis-cpu-µs/job) and logs, with -v, what each
// command cost per job.
type CPUMeter struct {
	c     redis.UniversalClient
	start float64
}

// NewCPUMeter measures the server c talks to.
func NewCPUMeter(c redis.UniversalClient) *CPUMeter { return &CPUMeter{c: c} }

// Start begins a measurement.
func (m *CPUMeter) Start(b *testing.B) {
	m.start = cpuSeconds(b, m.c)
	_ = m.c.ConfigResetStat(context.Background()).Err()
}

// Stop ends it, for jobs jobs.
func (m *CPUMeter) Stop(b *testing.B, jobs int) {
	b.ReportMetric((cpuSeconds(b, m.c)-m.start)/float64(jobs)*1e6, "redis-cpu-µs/job")
	logCommands(b, m.c, jobs)
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

// logCommands logs, with -v, what each command cost redis-server per job
// since the stats were reset (INFO commandstats): calls and microseconds.
// A script's time includes that of the commands it calls.
func logCommands(b *testing.B, c redis.UniversalClient, jobs int) {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		name, stats, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var calls, usec float64
		for _, kv := range strings.Split(stats, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				calls, _ = strconv.ParseFloat(v, 64)
			case "usec":
				usec, _ = strconv.ParseFloat(v, 64)
			}
		}
		b.Logf("%-22s %8.3f calls/job %7.1f µs/job %6.1f µs/call", strings.TrimPrefix(name, "cmdstat_"), calls/float64(jobs), usec/float64(jobs), usec/max(calls, 1))
	}
}
