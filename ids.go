// Ids that do not collide across the clones of a graph kept in git: each
// checkout draws its ids from a block of a million that only it uses, and
// records the last id it drew in a file of its own. Block 0 (1, 2, 3, …)
// is the block of the checkout whose id file says so: the one where a
// store created the task directory, which taskgraph init does.

package taskgraph

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"

	"github.com/taskgraph-dev/taskgraph/internal/filenames"
	"github.com/taskgraph-dev/taskgraph/internal/gitdir"
)

// idsFileName is the checkout's id file: {"last": N}, the last id this
// checkout allocated. It belongs to the machine (git ignores it): every
// clone keeps its own.
const idsFileName = filenames.IDs

// blockSize is how many ids a block holds. Block 0 (ids 1 to 999,999) is
// the block of the checkout where the graph began: a graph that never
// leaves one checkout keeps the sequential ids it always had. Every other
// checkout — every checkout without an id file — draws a block between
// firstBlock and lastBlock at random, so its ids have twelve digits:
// 482193000001, 482193000002, ...
const (
	blockSize  = 1_000_000
	firstBlock = 100_000
	lastBlock  = 999_999
)

// Why blocks, and why this size. Two clones of a repository, or two
// branches of one, create tasks without seeing each other's; git then
// merges their task files by name, so the ids must differ. A counter in
// the committed meta file cannot do it (each branch counts from the same
// value), and neither can a counter per checkout alone (clones start
// equal). A block per checkout makes the ids of two checkouts differ, and
// a counter kept outside git (the id file) makes two branches of one
// checkout differ, since switching branches does not reset it. Two
// checkouts draw the same block with probability 1 in 900,000 (for ten
// clones of one graph, 1 in 20,000), and even then their ids collide
// only if both create tasks before either sees the other's; a merge
// driver that meets two different tasks under one name reports it (see
// MergeTaskFiles). Twelve digits cost a model about four tokens where a
// small id costs one: measured in agenttools/tokenbudget.
//
// Why block 0 goes by the id file alone. Nothing committed can tell the
// checkout where the graph began from its clones: a clone made before the
// first task holds exactly what the origin holds. Only the moment the
// graph is made can, and only on the machine that makes it: the store
// that creates the task directory writes {"last": 0} then (beginHere),
// and the id file, which git never carries, keeps the claim.

// cloneIDs is the allocation state of a FileStore whose ids must not
// collide across clones: the id file's last id, read under the lock.
type cloneIDs struct {
	last  ID
	found bool  // the id file exists
	err   error // the id file cannot be used: writes that create refuse
}

// idsProblem says what to do about an id file that cannot be used.
const idsProblem = `it records the last task id this checkout allocated, so creating a task is refused (every other write and every read goes on) until it is a regular file holding {"last": N}; removing it is safe: the next task then takes an id from a block no other checkout uses`

// inGitWorkTree reports whether dir is inside a git working tree, where
// the graph may be committed, cloned and merged.
func inGitWorkTree(dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	repo, err := gitdir.Find(abs)
	// A .git that cannot be followed is still a repository: draw ids
	// that cannot collide.
	return err != nil || repo.Top != ""
}

// parseIDs decodes the content of the id file.
func parseIDs(data []byte) (ID, error) {
	var f struct {
		Last *ID `json:"last"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return 0, err
	}
	if f.Last == nil || *f.Last < 0 || *f.Last > MaxID {
		return 0, errors.New(`not {"last": N} with N a task id or 0`)
	}
	return *f.Last, nil
}

// readIDs reads the id file under the lock, before a write that may
// create a task.
func (s *FileStore) readIDs() error {
	fi, data, err := readFile(s.fs, s.root, s.dir, idsFileName, maxFileSize)
	s.ids = cloneIDs{found: fi != nil}
	if fi == nil && err == nil {
		return nil
	}
	if err == nil {
		if s.ids.last, err = parseIDs(data); err == nil {
			return nil
		}
		err = &CorruptError{Path: filepath.Join(s.dir, idsFileName), Err: err}
	}
	var ce *CorruptError
	if errors.As(err, &ce) {
		s.ids.err = fmt.Errorf("%w: %s", ce, idsProblem)
		return nil
	}
	return err
}

// allocator returns the function that gives the first of n new ids: the
// ids after the highest the id file's block holds, on disk or in the id
// file, or the start of a fresh block when that one is full, or when the
// checkout has no id file (it is not where the graph began, or it cannot
// tell).
func (s *FileStore) allocator() func(g *graph, n int) (ID, error) {
	return func(g *graph, n int) (ID, error) {
		if s.ids.err != nil {
			return 0, s.ids.err
		}
		if s.ids.found {
			block := s.ids.last / blockSize
			if first := highestIn(g, block, s.hwm, s.ids.last) + 1; first+ID(n) <= (block+1)*blockSize {
				return first, nil
			}
		}
		return freshBlock(g, n)
	}
}

// beginHere claims block 0 for this checkout: Open calls it when it has
// just created the task directory in a git working tree, where the graph
// therefore begins. The id file is durable before Open returns. (A
// process that created a task in the new directory in between drew a
// fresh block; replacing its id file only moves this checkout to block 0,
// which no one drew.)
func (s *FileStore) beginHere() error {
	if err := s.writeFile(idsFileName, []byte("{\"last\":0}\n")); err != nil {
		return err
	}
	return s.syncDir()
}

// highestIn returns the highest id known in block — a task, a corrupt
// file, the meta file's high-water mark, the id file's last id — or, if
// none is, the id before the block's first.
func highestIn(g *graph, block, hwm, last ID) ID {
	lo, hi := block*blockSize, (block+1)*blockSize
	top := max(lo, 0)
	if i, _ := slices.BinarySearch(g.ids, hi); i > 0 && g.ids[i-1] >= lo {
		top = max(top, g.ids[i-1])
	}
	for id := range g.broken {
		if id >= lo && id < hi {
			top = max(top, id)
		}
	}
	for _, id := range []ID{hwm, last} {
		if id >= lo && id < hi {
			top = max(top, id)
		}
	}
	return top
}

// freshBlock draws a block that no id on disk is in and returns its first
// id.
func freshBlock(g *graph, n int) (ID, error) {
	if n >= blockSize {
		return 0, &InvalidError{Field: "tasks", Reason: fmt.Sprintf("%d new tasks in one write: a graph kept in git takes at most %d at a time", n, blockSize-1)}
	}
	for {
		block := ID(firstBlock + rand.IntN(lastBlock-firstBlock+1))
		if highestIn(g, block, 0, 0) == block*blockSize {
			return block*blockSize + 1, nil
		}
	}
}

// recordIDs durably records the last id p allocates in the id file,
// before any task file of p is written: once a task file of the block is
// on disk, a later checkout of another branch may remove it, and only the
// id file then keeps its id from being drawn again.
func (s *FileStore) recordIDs(p *plan) error {
	if p.lastNew == 0 || s.g.alloc == nil {
		return nil
	}
	data, _ := json.Marshal(struct {
		Last ID `json:"last"`
	}{p.lastNew})
	if err := s.writeFile(idsFileName, append(data, '\n')); err != nil {
		return err
	}
	s.ids = cloneIDs{last: p.lastNew, found: true}
	return nil
}
