// Idempotency keys: a write retried after its answer was lost returns
// the first attempt's answer, and is never applied twice.

package hub

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync"
	"time"

	tg "github.com/taskgraph-dev/taskgraph"
)

// The headers of a write that may be retried. The Client sends both on
// every write; other clients may too.
const (
	// KeyHeader carries a key the client chose for one write, the same
	// on each of its attempts (at most 128 bytes). The name is not the
	// "Idempotency-Key" of the IETF draft on purpose: Go's http.Transport
	// resends a request carrying that one by itself, without RetryHeader.
	KeyHeader = "Taskgraph-Idempotency-Key"
	// RetryHeader says that an attempt with this key went out before and
	// its answer was lost. Its value is the HubHeader of the hub that
	// answered the client last before the first attempt went out, or "1"
	// if none had. A hub that does not remember the key applies the
	// retry only if it is that hub, never restarted since, and has
	// forgotten no key early (see maxKeys): then the first attempt never
	// reached it. Otherwise — it restarted, or it may have forgotten —
	// it answers with an error matching tg.ErrUnknownOutcome instead: the
	// first attempt may have been applied. A client must retry within
	// KeyWindow.
	RetryHeader = "Taskgraph-Retry"
	// HubHeader, on every answer, names the hub's instance: a new one at
	// each start.
	HubHeader = "Taskgraph-Hub"
)

// Bounds of what a hub remembers of its writes' keys.
const (
	// KeyWindow is how long a hub remembers a key's answer, and a store
	// that records keys (tg.KeyRecorder) its write.
	KeyWindow = tg.WriteKeyWindow
	// maxKeys bounds how many keys a hub remembers; past it the oldest
	// are forgotten first (a retry of one is then an unknown outcome).
	maxKeys = 100_000
	// maxKeyBytes bounds the answers kept, in bytes: past it, too, the
	// oldest keys are forgotten first.
	maxKeyBytes = 64 << 20
	// maxKeyLen bounds a key.
	maxKeyLen = 128
)

// answer is what a write answered: replayed to each retry.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// keyed is one key's write: running until done is closed, then its
// answer (nil if the write did not happen and may run again).
type keyed struct {
	fingerprint [32]byte
	ask         bool // a retry the hub does not remember: ask the store first
	at          time.Time
	done        chan struct{}
	answer      *answer
}

// keys remembers, in memory, the answer of each keyed write of the last
// KeyWindow. It is the hub's, not the store's: a hub that restarts
// forgets them, and answers their retries with ErrUnknownOutcome.
type keys struct {
	mu    sync.Mutex
	m     map[string]*keyed
	order []string // keys by first use, oldest first, for the bounds
	lost  bool     // a key was forgotten within its window (maxKeys, maxKeyBytes)
	bytes int      // of the answers kept
	now   func() time.Time
}

func newKeys() *keys { return &keys{m: map[string]*keyed{}, now: time.Now} }

// fingerprint is what makes two requests the same write.
func fingerprint(who Identity, r *http.Request, body []byte) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00", who.Name, r.Method, r.URL.Path, r.URL.RawQuery)
	h.Write(body)
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// begin starts the write keyed key by who, or finds it: it returns the
// entry and whether the caller runs the write (and must finish it). A
// key used for another request, or a retry of a key it does not
// remember, unless it is sure the first attempt never reached it
// (sameHub: the hub the client last saw, and none forgotten early), is
// an error — unless the store remembers keys (stored): then the caller
// asks it (keyed.ask).
func (k *keys) begin(who Identity, key string, fp [32]byte, retry, sameHub, stored bool) (*keyed, bool, error) {
	if len(key) > maxKeyLen {
		return nil, false, &tg.InvalidError{Field: KeyHeader, Reason: fmt.Sprintf("longer than %d bytes", maxKeyLen)}
	}
	id := who.Name + "\x00" + key // one token's keys never meet another's
	k.mu.Lock()
	defer k.mu.Unlock()
	k.expire()
	e, ok := k.m[id]
	switch {
	case ok && e.fingerprint != fp:
		return nil, false, &tg.InvalidError{Field: KeyHeader, Reason: "this key was used for another request: a key names one write, with the same method, path and body on every attempt"}
	case ok && (!closed(e.done) || e.answer != nil):
		return e, false, nil
	case !ok && retry && (!sameHub || k.lost) && !stored:
		return nil, false, fmt.Errorf("hub: a retry of a write this hub does not remember (it restarted, or the write is older than %v): %w", KeyWindow, &unknownOutcomeError{})
	case !ok:
		k.order = append(k.order, id)
	}
	// New, or its last attempt did not happen: this one runs it.
	e = &keyed{fingerprint: fp, at: k.now(), done: make(chan struct{}), ask: !ok && retry && (!sameHub || k.lost)}
	k.m[id] = e
	return e, true, nil
}

// finish records the answer of the write e — nil if it did not happen,
// so that a retry runs it again — and wakes the retries waiting on it.
func (k *keys) finish(e *keyed, a *answer) {
	k.mu.Lock()
	e.answer = a
	if a != nil {
		k.bytes += len(a.body)
	}
	k.mu.Unlock()
	close(e.done)
}

// expire forgets the keys past the window or the bound.
func (k *keys) expire() {
	cut := k.now().Add(-KeyWindow)
	n := 0
	for n < len(k.order) {
		e := k.m[k.order[n]]
		inWindow := e != nil && e.at.After(cut)
		if inWindow && len(k.order)-n <= maxKeys && k.bytes <= maxKeyBytes {
			break
		}
		if e != nil && !closed(e.done) {
			break // still running: forget it once it ends
		}
		k.lost = k.lost || inWindow
		if e != nil && e.answer != nil {
			k.bytes -= len(e.answer.body)
		}
		delete(k.m, k.order[n])
		n++
	}
	k.order = k.order[n:]
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
