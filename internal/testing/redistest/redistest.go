// Package redistest starts throwaway redis-server processes on free
// loopback ports for tests: single servers (which can be stopped and
// restarted on the same port, for outage tests), small Clusters, and a
// Sentinel with a master and a replica.
// A missing redis-server fails the test: scripts/test installs it.
package redistest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is one redis-server process.
type Server struct {
	t    testing.TB
	Port int
	Addr string
	dir  string
	args []string
	cmd  *exec.Cmd
	logs *logBuffer
}

func binary(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: the Redis tests need a real server (scripts/test installs redis-server)", name)
	}
	return p
}

// Prefix returns a fresh random key prefix, so that the tests sharing a
// server never see each other's keys.
func Prefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:])
}

// FreePort returns a free loopback TCP port, never one it has returned
// before in this process: a port closed is free for the kernel to hand
// out again, and a test's two ports (a Caddy's admin and HTTP) once came
// out the same.
func FreePort(t testing.TB) int {
	t.Helper()
	givenMu.Lock()
	defer givenMu.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !given[port] {
			given[port] = true
			return port
		}
	}
	t.Fatal("no loopback port this process has not handed out already")
	return 0
}

// given holds the ports FreePort has returned in this process.
var (
	givenMu sync.Mutex
	given   = map[int]bool{}
)

// Start starts a redis-server with extra arguments (e.g. "--appendonly",
// "yes") and stops it at the end of the test.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	port := FreePort(t)
	s := &Server{t: t, Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), dir: t.TempDir()}
	s.args = append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--dir", s.dir, "--protected-mode", "no"}, extra...)
	s.start()
	t.Cleanup(s.Stop)
	return s
}

// logBuffer holds a redis-server's output: exec's goroutine writes it
// while a failing test may read it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (s *Server) start() {
	s.t.Helper()
	s.logs = new(logBuffer)
	s.cmd = exec.Command(binary(s.t, "redis-server"), s.args...)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	// generous: a CI machine running the race detector on every package
	// at once once took more than 10 s to start one of a cluster's nodes
	deadline := time.Now().Add(30 * time.Second)
	for {
		if ping(s.Addr) == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s did not answer PING:\n%s", s.Addr, s.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server (SIGKILL: an outage, not a shutdown).
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart starts the server again on the same port and directory (with
// AOF enabled, the data comes back).
func (s *Server) Restart() { s.start() }

// ping sends a RESP PING and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(buf[:n]), "+PONG") {
		return fmt.Errorf("unexpected reply %q", buf[:n])
	}
	return nil
}

// StartCluster starts n masters with cluster mode enabled and joins them
// with redis-cli --cluster create. It returns their addresses.
func StartCluster(t testing.TB, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		dir := t.TempDir()
		s := Start(t, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-node-timeout", "2000", "--appendonly", "no")
		addrs = append(addrs, s.Addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.Command(binary(t, "redis-cli"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	// wait until every node sees all slots covered
	deadline := time.Now().Add(15 * time.Second)
	for _, a := range addrs {
		host, port, _ := net.SplitHostPort(a)
		for {
			out, _ := exec.Command(binary(t, "redis-cli"), "-h", host, "-p", port, "cluster", "info").CombinedOutput()
			if strings.Contains(string(out), "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster not ready on %s:\n%s", a, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return addrs
}

// Sentinel is a Redis Sentinel setup for tests: a master, one replica of
// it, and one Sentinel watching them (quorum 1) under MasterName.
type Sentinel struct {
	MasterName string
	Master     *Server
	Replica    *Server
	// Addrs are the Sentinels' addresses, what a client is given.
	Addrs []string
}

// StartSentinel starts a master, a replica and a Sentinel that fails over
// to the replica once the master has not answered for a second; all stop
// at the end of the test.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	master := Start(t)
	replica := Start(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	port := FreePort(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	// the Sentinel rewrites its config file, so it lives in the test's dir
	cfg := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode no\ndir %s\n"+
		"sentinel monitor hookline 127.0.0.1 %d 1\n"+
		"sentinel down-after-milliseconds hookline 1000\n"+
		"sentinel failover-timeout hookline 10000\n", port, dir, master.Port)
	if err := os.WriteFile(conf, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir, args: []string{conf, "--sentinel"}}
	s.start()
	t.Cleanup(s.Stop)
	return &Sentinel{MasterName: "hookline", Master: master, Replica: replica, Addrs: []string{s.Addr}}
}
