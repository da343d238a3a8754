package taskgraph

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/taskgraph-dev/taskgraph/gitrepo"
	"github.com/taskgraph-dev/taskgraph/internal/filenames"
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

// The git helpers that moved to package gitrepo keep their old names for
// one minor version: each still does what gitrepo's does.
func TestDeprecatedGitNamesAreGitrepos(t *testing.T) {
	dir := t.TempDir()
	missing, err := GitIgnoreMissing(dir)
	require.NoError(t, err)
	require.NotEmpty(t, missing)
	changed, err := WriteGitIgnore(dir)
	require.NoError(t, err)
	require.True(t, changed)
	missing, err = gitrepo.IgnoreMissing(dir)
	require.NoError(t, err)
	require.Empty(t, missing, "WriteGitIgnore wrote what gitrepo.WriteIgnore writes")

	missing, err = GitAttributesMissing(dir)
	require.NoError(t, err)
	require.NotEmpty(t, missing)
	changed, err = WriteGitAttributes(dir)
	require.NoError(t, err)
	require.True(t, changed)
	missing, err = gitrepo.AttributesMissing(dir)
	require.NoError(t, err)
	require.Empty(t, missing)

	tasks := filepath.Join(dir, DirName)
	require.NoError(t, os.Mkdir(tasks, 0o755))
	found, err := FindDir(tasks)
	require.NoError(t, err)
	want, err := gitrepo.FindDir(tasks)
	require.NoError(t, err)
	require.Equal(t, want, found)
	require.Equal(t, filenames.Tokens, TokensFileName)
	require.Equal(t, gitrepo.Driver, GitDriver)
	require.Equal(t, gitrepo.IgnoreName, GitIgnoreName)
	require.Equal(t, gitrepo.AttributesName, GitAttributesName)
}
