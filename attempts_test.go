package taskgraph_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	tg "github.com/taskgraph-dev/taskgraph"
)

// RetryDelay is the backoff doubled per attempt after the first, capped
// at MaxBackoff, as a plain loop computes it; and it answers at once for
// any input, as a task read from a file or a row may hold anything (a
// backoff of 0 and attempts near 2^63 once looped for ever, holding the
// store's lock).
func TestRetryDelay(t *testing.T) {
	model := func(backoff time.Duration, attempt int) time.Duration {
		d := backoff
		for i := 1; i < attempt && d < tg.MaxBackoff; i++ {
			d *= 2
		}
		return min(d, tg.MaxBackoff)
	}
	for _, b := range []time.Duration{1, 3, time.Microsecond, time.Second, 30 * time.Second, time.Hour, 17 * time.Hour, tg.MaxBackoff, tg.MaxBackoff + 1, math.MaxInt64} {
		for a := -1; a <= 70; a++ {
			assert.Equal(t, model(b, a), tg.RetryDelay(b, a), "backoff %v, attempt %d", b, a)
		}
	}
	start := time.Now()
	for _, b := range []time.Duration{math.MinInt64, -1, 0, 1, time.Second, math.MaxInt64} {
		for _, a := range []int{math.MinInt, -1, 0, 1, 1000, math.MaxInt32, math.MaxInt - 1, math.MaxInt} {
			d := tg.RetryDelay(b, a)
			assert.True(t, d >= 0 && d <= tg.MaxBackoff, "backoff %v, attempt %d: %v", b, a, d)
			if b <= 0 {
				assert.Zero(t, d, "no backoff, no wait")
			}
		}
	}
	assert.Less(t, time.Since(start), time.Second, "constant time for any input")
}
