// Package browser starts headless Chromium for the dashboard's browser
// tests: the end-to-end ones of internal/ingress and the black-box one of
// the built binary. It is test support, never imported by the product.
package browser

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumPath is where Debian's chromium package (which scripts/test
// installs) puts the browser.
const chromiumPath = "/usr/bin/chromium"

// Chromium finds the browser, failing (never skipping) when it is missing:
// a dashboard that no browser test ran is not a tested dashboard.
func Chromium(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err == nil {
		return chromiumPath
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("chromium is required for the dashboard browser test and is missing in CI (scripts/test installs it: apt-get install chromium)")
	}
	t.Fatalf("chromium is required for the dashboard browser test: install it with `apt-get install -y chromium` (or run scripts/test, which does)")
	return ""
}

// Page starts headless Chromium for a test: the context to drive it, and
// report, which returns the page's JavaScript exceptions and error log
// entries (CSP violations, failed loads) and the dialogs it opened (each
// accepted).
func Page(t testing.TB) (ctx context.Context, report func() (exceptions, dialogs []string)) {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1400),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelCtx := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelCtx)
	if err := chromedp.Do(bctx); err != nil { // starts the browser, with no timeout
		t.Fatalf("starting chromium: %v", err)
	}
	ctx, cancel := context.WithTimeout(bctx, 120*time.Second)
	t.Cleanup(cancel)
	var (
		mu                  sync.Mutex
		exceptions, dialogs []string
	)
	err := chromedp.Listen(bctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			dialogs = append(dialogs, string(ev.Type)+": "+ev.Message)
			go func() {
				if _, err := chromedp.Call(bctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true}); err != nil && bctx.Err() == nil {
					mu.Lock()
					exceptions = append(exceptions, "accepting a dialog: "+err.Error())
					mu.Unlock()
				}
			}()
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				exceptions = append(exceptions, string(ev.Entry.Source)+": "+ev.Entry.Text)
			}
		case *runtime.EventExceptionThrown:
			msg := ev.ExceptionDetails.Text
			if ex := ev.ExceptionDetails.Exception; ex != nil && ex.Description != "" {
				msg += " " + ex.Description
			}
			exceptions = append(exceptions, msg)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, func() ([]string, []string) {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), exceptions...), append([]string(nil), dialogs...)
	}
}
