// Liveness defaults per label, in taskgraph_liveness beside the limits:
// read by every Create and CreatePlan, in its transaction.

package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskgraph-dev/taskgraph"
)

var _ taskgraph.LivenessDefaulter = (*Store)(nil)

// SetLivenessDefault implements taskgraph.LivenessDefaulter.
func (s *Store) SetLivenessDefault(ctx context.Context, label string, d taskgraph.LivenessDefault) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	if err := taskgraph.Rules.LivenessDefaultArgs(label, d); err != nil { // before any SQL
		return err
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		if d == (taskgraph.LivenessDefault{}) {
			_, err := tx.Exec(ctx, `DELETE FROM taskgraph_liveness WHERE graph = $1 AND label = $2`, s.graph, label)
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO taskgraph_liveness (graph, label, max_runtime_us, progress_window_us) VALUES ($1, $2, $3, $4)
			ON CONFLICT (graph, label) DO UPDATE SET max_runtime_us = excluded.max_runtime_us, progress_window_us = excluded.progress_window_us`,
			s.graph, label, d.MaxRuntime.Microseconds(), d.ProgressWindow.Microseconds())
		return err
	})
}

// LivenessDefaults implements taskgraph.LivenessDefaulter.
func (s *Store) LivenessDefaults(ctx context.Context) (map[string]taskgraph.LivenessDefault, error) {
	return readSettings(ctx, s, s.livenessDefaults)
}

// livenessDefaults reads the graph's liveness defaults.
func (s *Store) livenessDefaults(ctx context.Context, q querier) (map[string]taskgraph.LivenessDefault, error) {
	var mr, pw int64
	return perLabel(ctx, q, `SELECT label, max_runtime_us, progress_window_us FROM taskgraph_liveness WHERE graph = $1`, s.graph, []any{&mr, &pw},
		func() taskgraph.LivenessDefault {
			return taskgraph.LivenessDefault{MaxRuntime: time.Duration(mr) * time.Microsecond, ProgressWindow: time.Duration(pw) * time.Microsecond}
		})
}
