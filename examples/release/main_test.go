package main

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
)

func TestRelease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	rep, err := run(ctx, t.TempDir(), &out)
	require.NoError(t, err, out.String())
	t.Log(out.String())

	assert.Equal(t, taskgraph.Completed, rep.epic.Status, "the epic, once every step was done")
	assert.Equal(t, taskgraph.Rollup{Total: 4, Done: 4}, rep.rollup)
	assert.Equal(t, "checkpoint at epoch 7 is in /ckpt/e7: resume from it", rep.handover, "the dead agent's note reached the next")
	assert.Equal(t, "agent-0", rep.train.PrevOwner)
	assert.Equal(t, taskgraph.Completed, rep.upload.Status)
	assert.Equal(t, 2, rep.upload.Attempts, "two failures retried, the third attempt done")
	require.NotEmpty(t, rep.upload.History)
	assert.Equal(t, taskgraph.HistoryApproved, rep.upload.History[0].Event, "no attempt before the approval")
	assert.Equal(t, "release-manager", rep.upload.History[0].By)
	assert.Equal(t, taskgraph.Completed, rep.docs.Status, "the hung agent's task came back and was done")
	assert.True(t, errors.Is(rep.hung, taskgraph.ErrLapsed) || errors.Is(rep.hung, taskgraph.ErrClaimed),
		"the hung agent's renewal was refused, the claim lapsed (or, first, taken over): %v", rep.hung)
	var lapse []string
	for _, h := range rep.docs.History {
		if h.Event == taskgraph.HistoryLapsed {
			lapse = append(lapse, h.By+": "+h.Detail)
		}
	}
	assert.Equal(t, []string{"agent-hung: no progress for 300ms"}, lapse)

	// The checked task completed with its check's evidence.
	assert.Equal(t, taskgraph.Completed, rep.smoke.Status)
	h := rep.smoke.History
	require.GreaterOrEqual(t, len(h), 2)
	assert.Equal(t, taskgraph.HistoryVerified, h[len(h)-2].Event)
	assert.Contains(t, h[len(h)-2].Detail, "check smoke passed: exit 0")
	assert.Contains(t, h[len(h)-2].Detail, "tail: smoke test passed")

	// The gpu tasks never ran at once: their claims and completions,
	// written under the store's lock, do not overlap (a lapsed claim ends
	// at its lapse).
	type span struct{ from, to time.Time }
	var spans []span
	for _, task := range rep.all {
		if !slices.Contains(task.Labels, "gpu") {
			continue
		}
		var start time.Time
		for _, h := range task.History {
			switch h.Event {
			case taskgraph.HistoryClaimed:
				start = h.At
			case taskgraph.HistoryLapsed, taskgraph.HistoryCompleted:
				spans = append(spans, span{start, h.At})
			}
		}
	}
	require.Len(t, spans, 3, "train (lapsed, then done) and distill")
	slices.SortFunc(spans, func(a, b span) int { return a.from.Compare(b.from) })
	for i := 1; i < len(spans); i++ {
		assert.False(t, spans[i].from.Before(spans[i-1].to), "gpu work overlapped: %v", spans)
	}
}
