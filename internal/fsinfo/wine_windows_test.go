//go:build wine

package fsinfo

// Under Wine (scripts/wine-test) t.TempDir's cleanup needs the delete
// fallback that internal/atomicfile switches on with -tags wine; this
// package's tests link it here.
import _ "github.com/taskgraph-dev/taskgraph/internal/atomicfile"
