package fsinfo

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProbeAndDirIDOnWindows(t *testing.T) {
	d, err := os.Open(t.TempDir())
	require.NoError(t, err)
	defer d.Close()
	assert.NotEmpty(t, Probe(d).Type, "the volume names its filesystem")
	id := DirID(d)
	assert.NotEmpty(t, id)
	d2, err := os.Open(t.TempDir())
	require.NoError(t, err)
	defer d2.Close()
	assert.NotEqual(t, id, DirID(d2), "two directories differ")
}
