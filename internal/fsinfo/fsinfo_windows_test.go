package fsinfo

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProbeOnWindows(t *testing.T) {
	d, err := os.Open(t.TempDir())
	require.NoError(t, err)
	defer d.Close()
	assert.NotEmpty(t, Probe(d).Type, "the volume names its filesystem")
}
