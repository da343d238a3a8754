package browsertest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskgraph-dev/taskgraph"
)

// burstEnv makes the test binary a writer process for TestLargeGraph:
// "DIR N" creates N tasks in DIR, then prints the time of its last write.
const burstEnv = "TASKGRAPH_BROWSERTEST_BURST"

// screenshotEnv names a directory to write board.png and graph.png into
// (scripts/screenshot sets it to docs/).
const screenshotEnv = "TASKGRAPH_SCREENSHOT_DIR"

var binDir string // where the taskgraph command is built

func TestMain(m *testing.M) {
	if spec := os.Getenv(burstEnv); spec != "" {
		os.Exit(burst(spec))
	}
	var err error
	if binDir, err = os.MkdirTemp("", "taskgraph-browsertest-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

// burst is the body of a writer process.
func burst(spec string) int {
	var dir string
	var n int
	if _, err := fmt.Sscan(spec, &dir, &n); err != nil {
		fmt.Fprintln(os.Stderr, "burst:", err)
		return 2
	}
	s, err := taskgraph.Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "burst:", err)
		return 1
	}
	defer s.Close()
	ctx := context.Background()
	for i := range n {
		if _, err := s.Create(ctx, taskgraph.NewTask{Subject: fmt.Sprintf("burst %d of pid %d", i, os.Getpid())}); err != nil {
			fmt.Fprintln(os.Stderr, "burst:", err)
			return 1
		}
	}
	fmt.Println(time.Now().UnixNano())
	return 0
}

var (
	buildOnce sync.Once
	buildErr  error
)

// cli returns the path of the taskgraph command, built once from this
// repository.
func cli(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(binDir, "taskgraph")
	buildOnce.Do(func() {
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/taskgraph")
		cmd.Dir = filepath.Join("..", "..")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("building taskgraph: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bin
}

// run runs the taskgraph command and returns its output.
func run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(cli(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("taskgraph %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// served is a running `taskgraph serve`.
type served struct {
	url   string // what it printed, http://127.0.0.1:PORT/, and with writes #token= a token of taskgraph token add
	base  string // the URL without the fragment
	token string
}

// serve starts `taskgraph serve` on dir and stops it with SIGINT when the
// test ends, checking that it shuts down cleanly.
func serve(t *testing.T, dir string, args ...string) served {
	t.Helper()
	// Run where a person would, beside the directory, so that the page is
	// titled with the name they gave.
	token := ""
	if slices.Contains(args, "--allow-writes") {
		// As a person does: a token of the hub's (an admin's, to reopen
		// tasks), then the URL serve prints with #token=TOKEN.
		out, err := exec.Command(cli(t), "token", "add", "board-"+strconv.Itoa(os.Getpid()), "--role", "admin", "--dir", dir).Output() // the token alone, on stdout
		if err != nil {
			t.Fatalf("taskgraph token add: %v", err)
		}
		token = strings.TrimSpace(string(out))
	}
	cmd := exec.Command(cli(t), append([]string{"serve", "--dir", filepath.Base(dir), "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Dir = filepath.Dir(dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("taskgraph serve after SIGINT: %v\n%s", err, stderr.String())
			}
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			t.Errorf("taskgraph serve still running 15s after SIGINT")
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Scan()
		line <- sc.Text()
		for sc.Scan() {
		}
	}()
	var url string
	select {
	case url = <-line:
	case <-time.After(time.Minute):
		t.Fatalf("taskgraph serve printed no URL in a minute\n%s", stderr.String())
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("taskgraph serve printed %q\n%s", url, stderr.String())
	}
	if strings.Contains(url, "#") {
		t.Fatalf("taskgraph serve printed %q: a token in its URL", url)
	}
	s := served{url: url, base: url, token: token}
	if token != "" {
		s.url = url + "#token=" + token
	}
	return s
}

// browserPath finds Chromium or Chrome. Without one the test fails under CI
// and is skipped elsewhere, with what to do.
func browserPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TASKGRAPH_BROWSER"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium or Chrome on PATH (nor $TASKGRAPH_BROWSER): run scripts/install-browser"
	if os.Getenv("CI") == "" {
		t.Skip(msg + "; under CI (CI set) this is a failure")
	}
	t.Fatal(msg)
	return ""
}

// browser opens a headless browser tab for the test, and fails the test on
// any script error or refused load the page reports.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browserPath(t)),
		chromedp.NoSandbox, // the tests may run as root, as CI does
		chromedp.WindowSize(1440, 900),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("hide-scrollbars", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", browserPath(t), err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			text := m.String()
			// A page that closes with its event stream open logs this;
			// everything else is a fault of the page.
			if m.IsException() || strings.Contains(text, "Refused to") || strings.Contains(text, "Content Security Policy") {
				t.Errorf("browser console: %s", text)
			}
		}
	}()
	return ctx
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// wait waits until a JavaScript expression is true in the page.
func wait(t *testing.T, ctx context.Context, what, expr string, timeout time.Duration) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
	if err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// click clicks an element with the mouse, as a person would.
func click(t *testing.T, ctx context.Context, selector string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(selector), chromedp.NodeVisible)); err != nil {
		t.Fatalf("clicking %s: %v", selector, err)
	}
}

// typeInto types text into an input.
func typeInto(t *testing.T, ctx context.Context, selector, text string) {
	t.Helper()
	// A live update may replace the field between finding it and typing
	// into it (the page re-renders the open task when it changes): then
	// type again, into the new field, from empty.
	var err error
	for range 3 {
		clear := fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (e) e.value = ""; })()`, selector)
		if _, err = chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](clear)); err != nil {
			continue
		}
		if err = chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(selector), text, chromedp.NodeVisible)); err == nil {
			return
		}
	}
	t.Fatalf("typing into %s: %v", selector, err)
}

// screenshot writes the page as name.png into $TASKGRAPH_SCREENSHOT_DIR, if
// it is set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv(screenshotEnv)
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", path, len(png))
}

func itoa(id taskgraph.ID) string { return strconv.FormatInt(int64(id), 10) }
