package fsinfo

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMountOf(t *testing.T) {
	mi := []byte(`22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
45 27 7:0 / /mnt/t rw,relatime - ext4 /dev/loop0 rw,noauto_da_alloc,data=writeback
46 27 0:50 / /mnt/b rw - btrfs /dev/loop1 rw,space_cache=v2,subvolid=5
`)
	info, src, ok := mountOf(mi, 7, 0)
	require.True(t, ok)
	assert.Equal(t, "/dev/loop0", src)
	assert.Equal(t, "ext4", info.Type)
	v, ok := info.Option("data")
	assert.True(t, ok)
	assert.Equal(t, "writeback", v)
	assert.True(t, info.Has("noauto_da_alloc"))
	assert.False(t, info.Has("dioread_nolock"))
	assert.Equal(t, "ext4 (noauto_da_alloc,data=writeback)", info.String())
	info, _, ok = mountOf(mi, 0, 50)
	require.True(t, ok)
	assert.Equal(t, "btrfs", info.String())
	_, _, ok = mountOf(mi, 9, 9)
	assert.False(t, ok)
	assert.Equal(t, "unknown filesystem", Info{}.String())
}

func TestProbe(t *testing.T) {
	d, err := os.Open(t.TempDir())
	require.NoError(t, err)
	defer d.Close()
	info := Probe(d)
	assert.NotEmpty(t, info.Type, "the test directory's mount is in /proc/self/mountinfo")
}
