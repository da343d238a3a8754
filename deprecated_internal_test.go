package taskgraph

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// The options that chose between group commit and the full protocol are
// kept for one minor version so old callers still compile: they must still
// open a store that writes with the one protocol there is.
func TestDeprecatedProtocolOptionsOpenTheOneProtocol(t *testing.T) {
	for name, opt := range map[string]Option{"WithGroupCommit": WithGroupCommit(), "WithSyncEachWrite": WithSyncEachWrite()} {
		t.Run(name, func(t *testing.T) {
			s, err := Open(t.TempDir(), opt)
			require.NoError(t, err)
			defer s.Close()
			require.Equal(t, ProtocolSyncEachWrite, s.Durability().Protocol)
			require.NotEqual(t, ProtocolGroupCommit, s.Durability().Protocol)
			task, err := s.Create(context.Background(), NewTask{Subject: "still written"})
			require.NoError(t, err)
			got, err := s.Get(context.Background(), task.ID)
			require.NoError(t, err)
			require.Equal(t, "still written", got.Subject)
		})
	}
}
