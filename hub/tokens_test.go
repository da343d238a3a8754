package hub_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/hub"
	"github.com/taskgraph-dev/taskgraph/internal/filenames"
)

// A token file keeps hashes only; a token identifies its name and role
// until revoked; a second process's revoke counts at once; a tokens file
// that cannot be read refuses every token.
func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	f := hub.OpenTokenFile(dir)
	_, err := f.Identify(ctx, "tgh_anything")
	require.ErrorIs(t, err, hub.ErrUnauthorized, "no file, no token")

	a, err := f.Add(ctx, "agent-1", hub.Agent)
	require.NoError(t, err)
	v, err := f.Add(ctx, "watcher", hub.Viewer)
	require.NoError(t, err)
	require.NotEqual(t, a, v)
	_, err = f.Add(ctx, "agent-1", hub.Admin)
	require.ErrorIs(t, err, tg.ErrInvalid, "one token a name")
	for _, bad := range []string{"", "has space", "-dash", string(make([]byte, 65))} {
		_, err = f.Add(ctx, bad, hub.Agent)
		require.ErrorIs(t, err, tg.ErrInvalid, "%q", bad)
	}

	data, err := os.ReadFile(filepath.Join(dir, filenames.Tokens))
	require.NoError(t, err)
	assert.NotContains(t, string(data), a[4:])

	who, err := f.Identify(ctx, a)
	require.NoError(t, err)
	assert.Equal(t, hub.Identity{Name: "agent-1", Role: hub.Agent}, who)
	who, err = hub.OpenTokenFile(dir).Identify(ctx, v)
	require.NoError(t, err)
	assert.Equal(t, hub.Identity{Name: "watcher", Role: hub.Viewer}, who)
	_, err = f.Identify(ctx, a+"x")
	require.ErrorIs(t, err, hub.ErrUnauthorized)
	_, err = f.Identify(ctx, "")
	require.ErrorIs(t, err, hub.ErrUnauthorized)

	require.NoError(t, hub.OpenTokenFile(dir).Revoke(ctx, "agent-1"), "another process revokes")
	_, err = f.Identify(ctx, a)
	require.ErrorIs(t, err, hub.ErrUnauthorized, "a revoked token is refused at once")
	require.ErrorIs(t, f.Revoke(ctx, "agent-1"), tg.ErrNotFound)
	infos, err := f.List(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	assert.Equal(t, "watcher", infos[0].Name)

	require.NoError(t, os.WriteFile(filepath.Join(dir, filenames.Tokens), []byte("{not json"), 0o600))
	_, err = f.Identify(ctx, v)
	require.ErrorIs(t, err, hub.ErrUnauthorized, "a corrupt file refuses every token")
	_, err = f.Add(ctx, "another", hub.Agent)
	require.ErrorIs(t, err, tg.ErrCorrupt, "and is never rewritten")
}
