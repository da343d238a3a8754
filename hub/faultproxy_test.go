package hub_test

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/hub"
)

// A fault is what the proxy does to one connection.
type fault int

const (
	pass         fault = iota // forward both ways
	dropAnswer                // forward the request; the hub applies it; the answer never comes back
	resetRequest              // forward part of the request, then reset both sides
	delay                     // wait, then forward
	split                     // forward in frames of a few bytes
	faults                    // how many there are
)

func (f fault) String() string {
	return [...]string{"pass", "drop-answer", "reset-request", "delay", "split"}[f]
}

// faultProxy is a TCP proxy in this process, in front of a hub, that
// does to each connection the fault next returns, and counts them.
type faultProxy struct {
	ln     net.Listener
	to     string
	next   func() fault
	mu     sync.Mutex
	counts map[fault]int
}

func newFaultProxy(t *testing.T, to string, next func() fault) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &faultProxy{ln: ln, to: to, next: next, counts: map[fault]int{}}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *faultProxy) serve(c net.Conn) {
	defer c.Close()
	u, err := net.Dial("tcp", p.to)
	if err != nil {
		return
	}
	defer u.Close()
	f := p.next()
	p.mu.Lock()
	p.counts[f]++
	p.mu.Unlock()
	switch f {
	case dropAnswer:
		go io.Copy(u, c)
		buf := make([]byte, 1)
		io.ReadFull(u, buf) // the hub answered: it applied the write
		return              // and the answer is lost
	case resetRequest:
		buf := make([]byte, 24+rand.IntN(64))
		n, _ := io.ReadAtLeast(c, buf, 1)
		u.Write(buf[:n])
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset, not a clean close
		}
		return
	case delay:
		time.Sleep(time.Duration(5+rand.IntN(40)) * time.Millisecond)
	}
	chunk := 0
	if f == split {
		chunk = 1 + rand.IntN(7)
	}
	done := make(chan struct{}, 2)
	go func() { copyFrames(u, c, chunk); done <- struct{}{} }()
	go func() { copyFrames(c, u, chunk); done <- struct{}{} }()
	<-done
}

// copyFrames copies src to dst in writes of at most chunk bytes (0: as
// read).
func copyFrames(dst, src net.Conn, chunk int) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for b := buf[:n]; len(b) > 0; {
			k := len(b)
			if chunk > 0 {
				k = min(k, chunk)
			}
			if _, werr := dst.Write(b[:k]); werr != nil {
				return
			}
			b = b[k:]
		}
		if err != nil {
			if tc, ok := dst.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			return
		}
	}
}

// Through a proxy that drops answers after the hub applied the write,
// resets requests midway, delays and splits frames, agents create,
// claim and complete: every write the client acknowledged is in the
// store once, no write is applied twice, and a write the client could
// not settle is ErrUnknownOutcome — never another error that would say it
// did not happen while it did.
func TestFaultProxy(t *testing.T) {
	faultProxyRun(t, tg.NewMemStore(), false)
}

// The same through a hub that restarts at every request (a new Server
// for each), in front of a store that records write keys: every retry
// is answered from the store, and an unsettled write is one whose task
// changed before its retry came (another agent claimed what it created).
// Before keys were recorded in the store, each dropped answer was an
// unknown outcome.
func TestFaultProxyRestartingFileStore(t *testing.T) {
	s, err := tg.Open(t.TempDir())
	require.NoError(t, err)
	defer s.Close()
	faultProxyRun(t, s, true)
}

func TestFaultProxyRestartingPostgres(t *testing.T) {
	faultProxyRun(t, openPG(t, pool(t)), true)
}

// faultProxyRun runs the fault proxy test on mem, through one hub, or a
// new hub for every request if restart.
func faultProxyRun(t *testing.T, mem hub.Store, restart bool) {
	tokens := &hub.MemTokens{}
	api := hub.NewServer(mem, tokens)
	defer api.Close()
	var handler http.Handler = api
	var recalled atomic.Int64
	if restart {
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			api := hub.NewServer(mem, tokens)
			api.ServeHTTP(w, r)
			recalled.Add(api.Recalled())
		})
	}
	ts := httptest.NewServer(handler)
	defer ts.Close()
	r := rand.New(rand.NewPCG(41, 6))
	var rmu sync.Mutex
	proxy := newFaultProxy(t, strings.TrimPrefix(ts.URL, "http://"), func() fault {
		rmu.Lock()
		defer rmu.Unlock()
		if r.IntN(2) == 0 {
			return pass
		}
		return fault(1 + r.IntN(int(faults)-1))
	})

	const agents, each = 4, 40
	var wg sync.WaitGroup
	type outcome struct{ acked, unknown []string }
	outs := make([]outcome, agents)
	completed := make([]map[tg.ID]bool, agents)
	for a := range agents {
		name := fmt.Sprintf("agent-%d", a)
		tok, err := tokens.Add(ctx, name, hub.Agent)
		require.NoError(t, err)
		// A connection a request: the proxy's fault is the request's.
		hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		c, err := hub.NewClient("http://"+proxy.ln.Addr().String(), tok, hub.WithHTTPClient(hc))
		require.NoError(t, err)
		completed[a] = map[tg.ID]bool{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				subject := fmt.Sprintf("%s-%d", name, i)
				_, err := c.Create(ctx, tg.NewTask{Subject: subject})
				switch {
				case err == nil:
					outs[a].acked = append(outs[a].acked, subject)
				case errors.Is(err, tg.ErrUnknownOutcome):
					outs[a].unknown = append(outs[a].unknown, subject)
				default:
					t.Errorf("%s: create: %v", name, err)
				}
				task, err := c.ClaimNext(ctx, "")
				if errors.Is(err, tg.ErrNoReady) || errors.Is(err, tg.ErrUnknownOutcome) {
					continue
				}
				if !assert.NoError(t, err, "%s: claim-next", name) {
					continue
				}
				if _, err := c.Complete(ctx, task.ID, ""); err == nil {
					completed[a][task.ID] = true
				} else if !errors.Is(err, tg.ErrUnknownOutcome) {
					t.Errorf("%s: complete %d: %v", name, task.ID, err)
				}
			}
		}()
	}
	wg.Wait()

	all, err := mem.List(ctx)
	require.NoError(t, err)
	count := map[string]int{}
	for _, task := range all {
		count[task.Subject]++
		assert.LessOrEqual(t, len(filterHistory(task, tg.HistoryClaimed)), 1, "task %d claimed at most once: %+v", task.ID, task.History)
	}
	acked, unknown := 0, 0
	for a, o := range outs {
		for _, s := range o.acked {
			assert.Equal(t, 1, count[s], "acknowledged create %s is in the store exactly once", s)
		}
		for _, s := range o.unknown {
			assert.LessOrEqual(t, count[s], 1, "an unsettled create %s is applied at most once", s)
		}
		for id := range completed[a] {
			task, err := mem.Get(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, tg.Completed, task.Status)
			assert.Equal(t, fmt.Sprintf("agent-%d", a), task.Owner)
		}
		acked += len(o.acked)
		unknown += len(o.unknown)
	}
	for s, n := range count {
		assert.Equal(t, 1, n, "%s created %d times", s, n)
	}
	proxy.mu.Lock()
	t.Logf("faults: %v; creates acknowledged %d, unsettled %d; tasks in the store %d; retries answered from the store %d", proxy.counts, acked, unknown, len(all), recalled.Load())
	if restart {
		assert.Positive(t, recalled.Load(), "retries answered from the store")
	}
	for f := dropAnswer; f < faults; f++ {
		assert.Positive(t, proxy.counts[f], "the run met %v", f)
	}
	proxy.mu.Unlock()
}

// filterHistory returns the entries of task's history of kind ev.
func filterHistory(task tg.Task, ev tg.HistoryEvent) []tg.Transition {
	var out []tg.Transition
	for _, h := range task.History {
		if h.Event == ev {
			out = append(out, h)
		}
	}
	return out
}
