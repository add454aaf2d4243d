package embedded_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/storagetest"
)

// countsChildEnv names the store file of TestCountsCrash's child process.
const countsChildEnv = "HOOKLINE_COUNTS_CHILD_DB"

// TestCountsCrashChild is the child of TestCountsCrash (it does nothing
// when run alone): 8 goroutines enqueue, lease and finish jobs
// (delivered, retried, dead) and settle DLQ entries, until the process is
// killed; it says RUNNING once writes are under way.
func TestCountsCrashChild(t *testing.T) {
	path := os.Getenv(countsChildEnv)
	if path == "" {
		return // run by TestCountsCrash only
	}
	s, err := embedded.Open(path, embedded.Options{})
	if err != nil {
		fmt.Println("ERROR", err)
		return
	}
	ctx := context.Background()
	var once sync.Once
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				ev := &storage.Event{ID: fmt.Sprintf("w%d-%07d", w, i), EventID: fmt.Sprintf("evt_%d_%d", w, i), Dedupe: true,
					Source: fmt.Sprintf("src%d", i%3), Upstream: "http://127.0.0.1:1/", Body: []byte(`{}`), ReceivedAt: time.Now()}
				if i%5 == 0 {
					ev.OrderKey = fmt.Sprintf("k%d", w)
				}
				if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
					fmt.Println("ERROR", err)
					return
				}
				jobs, err := s.Lease(ctx, time.Now(), 2, time.Minute, nil)
				if err != nil {
					fmt.Println("ERROR", err)
					return
				}
				for k, j := range jobs {
					out := []storage.Outcome{{Result: storage.Delivered}, {Result: storage.Retry, Due: time.Now()},
						{Result: storage.Dead, Error: "bad"}}[(i+k)%3]
					if err := s.Finish(ctx, j, out); err != nil && err != storage.ErrLeaseLost {
						fmt.Println("ERROR", err)
						return
					}
					if out.Result == storage.Dead && i%2 == 0 {
						_ = s.DLQSetStatus(ctx, j.ID, storage.DLQResolved, "ok", time.Now())
					}
				}
				if i == 50 {
					once.Do(func() { fmt.Println("RUNNING") })
				}
			}
		}()
	}
	wg.Wait()
}

// TestCountsCrash: a process killed (SIGKILL) in the middle of writes of
// every kind leaves counters that are exact: reopened, QueueByLane and
// DLQCounts answer what reading every job and entry finds (the counters
// change in the transaction of the write they count).
func TestCountsCrash(t *testing.T) {
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hookline.db")
			cmd, sc := startChild(t, "TestCountsCrashChild", countsChildEnv+"="+path)
			for sc.Scan() {
				line := sc.Text()
				if strings.HasPrefix(line, "ERROR") {
					t.Fatalf("child: %s", line)
				}
				if line == "RUNNING" {
					break
				}
			}
			time.Sleep(time.Duration(50*(round+1)) * time.Millisecond) // writes under way
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()

			s := openStore(t, path)
			wantLanes, wantDLQ := storagetest.WantRecounted(t, s, "after the crash")
			if t.Failed() {
				t.Logf("leases:\n%s", strings.Join(s.LeasesForTest(), "\n"))
			}
			if len(wantLanes) == 0 || len(wantDLQ) == 0 {
				t.Fatalf("the child wrote too little: %v %v", wantLanes, wantDLQ)
			}
		})
	}
}

// startChild runs test (a child test of this binary, which does its work
// only when its environment says so) in a process of its own with env
// added, for a test to kill it; the scanner reads its standard output.
func startChild(t *testing.T, test string, env ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(out)
}
