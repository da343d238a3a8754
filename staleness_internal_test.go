//go:build !windows

package taskgraph

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDroppedLogRecordIsSeen: a write whose change-log record is lost (the
// writer died after its commit point, or the append vanished) is seen by a
// long-lived store — also after another writer has written since, whose
// record accounts for the directory's new mtime. (Before the announcement
// record, such a store kept showing the old state indefinitely.)
func TestDroppedLogRecordIsSeen(t *testing.T) {
	ctx := context.Background()
	template := faultTemplate(t)
	for _, m := range faultMutations {
		t.Run(m.name, func(t *testing.T) {
			dir := copyTree(t, template)
			readers := []*FileStore{openDir(t, dir), openDir(t, dir)}
			for _, r := range readers {
				_, err := r.List(ctx) // warm: from now on it follows the log
				require.NoError(t, err)
			}
			w := openDir(t, dir)
			_, err := w.List(ctx)
			require.NoError(t, err)
			// The record after the commit point, after the
			// announcement.
			df := &dropFS{fileSystem: w.fs, at: 2}
			w.useFS(df)
			require.NoError(t, m.do(w))
			require.Equal(t, 2, df.n, "one announcement, one record")

			assert.Equal(t, listDir(t, dir), must(readers[0].List(ctx)), "read right after the write")
			_, err = openDir(t, dir).Create(ctx, NewTask{Subject: "a later write by another store"})
			require.NoError(t, err)
			want := listDir(t, dir)
			assert.Equal(t, want, must(readers[1].List(ctx)), "read after a later write")
			b := must(readers[1].Board(ctx))
			fresh := must(openDir(t, dir).Board(ctx))
			assert.Equal(t, idsOf(fresh.Ready), idsOf(b.Ready), "no phantom ready task")
		})
	}
}

func idsOf(ts []Task) []ID {
	out := []ID{}
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}
