// Bounds on what one token, and all clients together, may ask of a hub.

package hub

import (
	"errors"
	"math"
	"sync"
	"time"
)

// The refusals of a hub that is asked too much. Neither changed anything:
// the request may be sent again after the pause its Retry-After header
// says (the Client does so by itself).
var (
	// ErrRateLimited is matched by the error of a request past its
	// token's rate (WithRate).
	ErrRateLimited = errors.New("hub: too many requests with this token")
	// ErrBusy is matched by the error of an event stream, or of a new
	// MCP session, past MaxSessions.
	ErrBusy = errors.New("hub: too many event streams")
)

// MaxSessions bounds the event streams a hub keeps at once (each runs a
// watch of the store, and outlives its connection by a minute), and,
// apart, its MCP sessions.
const MaxSessions = 1024

// The default rate of each token: enough for an agent's loop many times
// over, and for bursts of a script.
const (
	DefaultRate  = 200 // requests a second
	DefaultBurst = 2 * DefaultRate
)

// Option configures a Server.
type Option func(*Server)

// WithRate bounds each token at perSecond requests a second, in bursts
// of up to burst; perSecond 0 removes the bound. Unless set: DefaultRate
// and DefaultBurst.
func WithRate(perSecond float64, burst int) Option {
	return func(s *Server) { s.rate = newRate(perSecond, burst) }
}

// rate is a token bucket per token name.
type rate struct {
	perSecond, burst float64
	mu               sync.Mutex
	buckets          map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newRate(perSecond float64, burst int) *rate {
	return &rate{perSecond: perSecond, burst: math.Max(float64(burst), 1), buckets: map[string]*bucket{}}
}

// allow takes one request from name's bucket, or says how long until
// there is one.
func (r *rate) allow(name string, now time.Time) (bool, time.Duration) {
	if r.perSecond <= 0 {
		return true, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.buckets[name]
	if b == nil {
		b = &bucket{tokens: r.burst, at: now}
		r.buckets[name] = b
	}
	b.tokens = math.Min(r.burst, b.tokens+now.Sub(b.at).Seconds()*r.perSecond)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / r.perSecond * float64(time.Second))
}
