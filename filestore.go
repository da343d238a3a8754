// FileStore: the Store on a directory of task files, its open, close and
// the lock-read-decide-write frame every operation runs in.

package taskgraph

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
	"github.com/taskgraph-dev/taskgraph/internal/cachedir"
	"github.com/taskgraph-dev/taskgraph/internal/changelog"
	"github.com/taskgraph-dev/taskgraph/internal/filenames"
	"github.com/taskgraph-dev/taskgraph/internal/fsinfo"
	"github.com/taskgraph-dev/taskgraph/internal/journal"
)

// Names of the files a FileStore keeps beside the task files. They start
// with a dot so that the reference's glob task_*.json never matches them.
const (
	metaFileName    = filenames.Meta    // the id high-water mark
	journalFileName = filenames.Journal // a multi-file write in progress
	logFileName     = filenames.Log     // which tasks each write changed
	taskFilePrefix  = filenames.TaskPrefix
	taskFileSuffix  = filenames.TaskSuffix
)

// FileStore is a Store on a directory of task files, shared safely by every
// process and goroutine that opens the same directory.
//
// Every write takes an exclusive flock on the directory, brings its cache up
// to date (see below), re-checks the files the decision depends on, and
// replaces files atomically: it writes a temporary file in the directory
// and renames it over the old one: the file is fsynced before the rename and
// the directory after it, under the lock (on Windows, which cannot fsync a
// directory, NTFS's journal commits the rename: docs/windows.md). A write
// that touches several files first writes a durable journal holding all of
// them, so after a crash either all or none of it is visible; the next
// writer replays it. A write returns only once it is durable, and since it
// is durable before it lets go of the lock, no operation returns a change,
// nor a watch reports it, before it is.
//
// The cache: each write announces the ids it is about to change in a small
// change log (.taskgraph.log) before its commit point, and records their
// new content and the directory's mtime after it. Before any operation a
// store reads only the log records it has not seen and applies them; an
// announcement without its record (the writer died, or the append was
// lost) makes it reload those tasks from their files, and a directory
// mtime the log does not explain (a file created, renamed or removed by
// something that does not take the lock) makes it rescan the directory.
// The files an operation reads to decide are also compared with their
// last-seen inode, size and mtime, so an edit made by hand in place is
// never overwritten blindly. See Store for the staleness this bounds.
//
// Leftover temporary files of writers that died are removed by the next
// write (which holds the exclusive lock, so none can belong to a live
// writer); Check reports them until then.
type FileStore struct {
	dir  string
	cfg  config
	root *os.Root
	dirf *os.File // the directory, for fsync and stat
	lock *dirLock
	sem  chan struct{} // serialises this store's goroutines

	// Guarded by sem.
	closed    bool
	scanned   bool
	g         *graph
	stamps    map[ID]stamp
	hwm       ID    // high-water mark in the meta file
	metaStamp stamp // of the meta file as a read last read it (refreshMeta)
	// snapshotLoads counts the task files scans have read since the
	// snapshot was last written (snapshot.go).
	snapshotLoads int
	// ids is the id file as read under the lock, when ids come from this
	// checkout's block (ids.go: g.alloc is set).
	ids      cloneIDs
	log      changelog.Log
	dirMtime int64 // directory mtime that the cache accounts for
	// metaErr and journalErr report a meta or journal file that cannot be
	// used: reads go on, writes refuse with them.
	metaErr, journalErr error
	temps               []string // temporary files of dead writers, found by the last scan
	// The cache directory, as writes decided ahead of the lock (ahead.go)
	// and spares use it, or that it was found missing (a write creates it).
	cacheDir cachedir.Dir
	replaced []*os.File      // old versions held open by holdReplaced, closed after the lock
	spares   cachedir.Spares // old versions kept to be overwritten (recycle.go)
	stats    struct{ writes, ahead, scans, recycled atomic.Int64 }
	hub      hub // this store's watchers, told of every change to the cache

	exclusive  bool           // how the lock is held now
	inflight   sync.WaitGroup // operations between acquire and the end of their afterUnlock
	unlockDir  func()         // lets go of the directory lock that acquire took
	durability Durability     // chosen at Open

	fs   fileSystem    // every step on the directory; tests inject faults here
	done chan struct{} // closed by Close, to end Watch

	approvals // Approver and ApprovalPolicer (approval.go); the policy in the meta file
}

// stamp identifies one version of a file.
type stamp = changelog.Stamp

func stampOf(fi os.FileInfo) stamp {
	return stamp{Ino: atomicfile.FileID(fi), Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
}

// Open opens the task directory dir, creating it (durably: its entry is
// fsynced in its parent) if it does not exist, unless WithoutCreate is
// given. The directory is read lazily, by the first operation, under the lock.
// In a git working tree, an Open that creates the directory makes this
// checkout the one where the graph began, whose ids are 1, 2, 3, …: every
// other checkout draws its ids from a block of its own (docs/git.md).
//
// The path is resolved once, here: every later file operation, the lock
// included, goes through the directory handle opened now. A store keeps
// working on the same directory if the process changes its working
// directory after opening a relative path, or if the directory is renamed
// while it is open.
func Open(dir string, opts ...Option) (*FileStore, error) {
	cfg := newConfig(opts)
	created, err := makeDir(dir, cfg)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("taskgraph: open: %w", err)
	}
	dirf, err := root.Open(".")
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("taskgraph: open: %w", err)
	}
	s := &FileStore{
		dir:    dir,
		cfg:    cfg,
		root:   root,
		dirf:   dirf,
		lock:   newDirLock(root, dirf, dir, true),
		sem:    make(chan struct{}, 1),
		g:      newGraph(),
		stamps: make(map[ID]stamp),
		fs:     newDirFS(root, dirf),
		done:   make(chan struct{}),
	}
	s.approvals = approvals{e: s, setPolicy: func(ctx context.Context, p ApprovalPolicy) error { return setMetaPolicy(ctx, s, p) }}
	if fsys, ok := s.fs.(dirFS); ok && runtime.GOOS != "windows" {
		fsys.cache = &s.cacheDir // renames out of it through its handle
		s.fs = fsys
	}
	s.log = changelog.New(s.fs, root, dir, cfg.logLimit)
	s.chooseProtocol()
	sp := &s.spares
	sp.On, sp.FS, sp.TaskRoot, sp.Cache = atomicfile.CanReuse && s.cfg.offTheLock(), s.fs, root, &s.cacheDir
	sp.FilePerm, sp.Filled, sp.Inflight = cfg.filePerm, &s.stats.recycled, &s.inflight
	if _, err := root.Lstat(idsFileName); err == nil || inGitWorkTree(dir) {
		s.g.alloc = s.allocator() // ids from this checkout's block
	}
	if created && s.g.alloc != nil {
		if err := s.beginHere(); err != nil {
			s.Close()
			return nil, err
		}
	}
	if created {
		cfg.log.Info("taskgraph: created the task directory", "dir", dir)
	}
	return s, nil
}

// chooseProtocol records the protocol the options choose, and the
// directory's filesystem, for Durability.
func (s *FileStore) chooseProtocol() {
	info := fsinfo.Probe(s.dirf)
	s.durability = Durability{Protocol: ProtocolSyncEachWrite, Filesystem: info.String(),
		Reason: "every write fsyncs its files and the directory before it returns"}
	if runtime.GOOS == "windows" {
		s.durability.Reason = "every write fsyncs its files (FlushFileBuffers) before it returns; Windows cannot fsync a directory, so a rename is durable once NTFS commits its own journal, within seconds (docs/windows.md)"
	}
	if data, _ := info.Option("data"); info.Type == "ext4" && info.AllOptions && data == "" {
		s.durability.Reason += " (ext4 without a journal: even so, the power-loss test saw a synced file come back zero-filled after e2fsck: use a journal where a write must survive a power loss; docs/durability.md)"
	}
	if s.cfg.noSync {
		s.durability.Protocol, s.durability.Reason = ProtocolNoSync, "WithoutSync: nothing is fsynced"
	}
	s.cfg.log.Debug("taskgraph: durability protocol chosen", "dir", s.dir, "protocol", string(s.durability.Protocol), "filesystem", s.durability.Filesystem, "reason", s.durability.Reason)
	// Writes are decided ahead in the cache directory: the first commit
	// makes sure it exists (ahead.go).
	if !s.cfg.noSync {
		s.cacheDir.Want()
	}
}

// makeDir makes sure dir is a directory, and reports whether it created
// it. It creates it and any missing parent unless cfg says WithoutCreate,
// and fsyncs the parent of each directory it created, so that a power
// loss cannot lose the new entry (and with it every task written there).
func makeDir(dir string, cfg config) (created bool, err error) {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && fi.IsDir():
		return false, nil
	case err == nil:
		return false, fmt.Errorf("taskgraph: open %s: not a directory: %w", dir, ErrInvalid)
	case !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("taskgraph: open: %w", err)
	case cfg.noCreate:
		return false, &dirNotFoundError{dir: dir, err: err}
	}
	var made []string // the missing directories, deepest first
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		made = append(made, d)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("taskgraph: open: %w", err)
	}
	if cfg.noSync {
		return true, nil
	}
	for _, d := range made {
		if err := cfg.syncDir(filepath.Dir(d)); err != nil {
			return true, fmt.Errorf("taskgraph: open: make the new directory %s durable: %w", d, err)
		}
	}
	return true, nil
}

// syncPath fsyncs the directory at path.
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return atomicfile.SyncDir(f)
}

// Dir returns the directory the store was opened on.
func (s *FileStore) Dir() string { return s.dir }

// Stats counts what a FileStore has done since Open; see [FileStore.Stats].
type Stats struct {
	Writes   int64 // writes committed
	Ahead    int64 // of them, writes whose task file was written and fsynced before the lock (ahead.go)
	Scans    int64 // reads of the whole directory (the first operation's, and rescans)
	Recycled int64 // task files written into the file of a version replaced earlier, not a new one (Linux; recycle.go)
}

// Stats returns the store's counters: how many writes were decided off the
// lock, and how often the cache had to read the whole directory.
func (s *FileStore) Stats() Stats {
	return Stats{
		Writes:   s.stats.writes.Load(),
		Ahead:    s.stats.ahead.Load(),
		Scans:    s.stats.scans.Load(),
		Recycled: s.stats.recycled.Load(),
	}
}

// Close releases the store's descriptors and ends its watches, and returns
// the errors of closing them. Tasks are already on disk.
func (s *FileStore) Close() error {
	s.sem <- struct{}{}
	defer func() { <-s.sem }()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.done)
	// An operation that let go of the semaphore may still be freeing the
	// versions its write replaced, or pooling its spares.
	s.inflight.Wait()
	var errs []error
	errs = append(errs, s.log.Close())
	s.spares.Close()
	errs = append(errs, s.cacheDir.Close(), s.lock.close(), s.dirf.Close(), s.root.Close())
	return errors.Join(errs...)
}

// acquire takes the store's semaphore and the directory lock, replays a
// pending journal and brings the cache up to date. Every operation then
// ends in two steps: unlock lets go of both, and afterUnlock frees what the
// operation's write replaced. Everything an operation read or wrote is
// durable before unlock: a write made it so at its commit point, under the
// lock (commit.go), and a read found nothing that was not (see refresh).
func (s *FileStore) acquire(ctx context.Context, exclusive bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		return ErrClosed // Close holds the semaphore while it waits for what is in flight
	}
	if s.closed {
		<-s.sem
		return ErrClosed
	}
	for {
		unlock, err := s.lock.lock(ctx, exclusive)
		if err != nil {
			<-s.sem
			return lockFailed(err)
		}
		s.exclusive = exclusive
		err = s.prepare()
		if errors.Is(err, errNeedExclusive) && !exclusive {
			// Finishing another writer's work is a write: take the
			// lock exclusive and look again, since another process
			// may have done it in between.
			unlock()
			exclusive = true
			continue
		}
		if err != nil {
			// Rebuild the cache from scratch next time rather than
			// trust one that an error left half refreshed.
			s.scanned = false
			unlock()
			<-s.sem
			return err
		}
		s.inflight.Add(1)
		s.unlockDir = unlock
		return nil
	}
}

// afterLock is what an operation leaves to do once it has let go of the
// lock (unlock): free or pool the versions its write replaced
// (afterUnlock).
type afterLock struct {
	replaced []*os.File // old versions held open (holdReplaced), closed after the lock
	linked   []string   // old versions kept as spares (linkReplaced), pooled
}

// unlock ends an operation's hold on the store: it lets go of the
// directory lock, writes the snapshot of the cache and lets go of the
// semaphore. What is left to do is returned, for afterUnlock.
func (s *FileStore) unlock() afterLock {
	s.unlockDir()
	s.unlockDir = nil
	a := afterLock{replaced: s.replaced, linked: s.spares.TakeLinked()}
	s.replaced = nil
	s.writeSnapshot() // outside the lock: it is this store's cache
	if !s.closed {
		s.spares.TopUp()
	}
	<-s.sem
	return a
}

// afterUnlock is the last step of every operation, after the lock: it
// frees the versions the write replaced (their last close, whose cost is
// the filesystem freeing their blocks) and pools its spares, so that no
// writer queued for the lock waits for either.
func (s *FileStore) afterUnlock(a afterLock) {
	defer s.inflight.Done()
	for _, f := range a.replaced {
		f.Close()
	}
	s.spares.Pool(a.linked)
}

// errNeedExclusive: the directory holds work of a writer that died (a
// journal, or records a restart may have kept from the files), which only
// the exclusive lock may finish.
var errNeedExclusive = errors.New("taskgraph: needs the exclusive lock")

// prepare brings the store up to date under the lock: it validates and
// replays a pending journal and refreshes the cache.
func (s *FileStore) prepare() error {
	s.journalErr = nil
	var j *journal.Journal
	if _, err := s.root.Lstat(journalFileName); err == nil {
		// Validated before anything else: a journal that cannot be
		// replayed is never touched, and reads go on without it.
		var ce *CorruptError
		j, err = s.readJournal()
		switch {
		case errors.As(err, &ce):
			s.journalErr, j = err, nil
		case err != nil:
			return err
		}
		if j != nil && !s.exclusive {
			return errNeedExclusive
		}
	}
	// The cache is brought up to date first, so that the records a replay
	// appends to the change log come after every record this store has
	// read.
	err := s.refresh()
	if err == nil && len(s.g.broken) > 0 {
		// Files that cannot be used are few, and someone may have fixed
		// one in place: each is checked again, since while any is broken
		// some writes refuse (see planDelete).
		_, err = s.verify(slices.Collect(maps.Keys(s.g.broken)))
	}
	if err == nil && j != nil {
		if rerr := s.replayJournal(j); rerr != nil {
			s.readThrough(j, rerr)
		}
	}
	return err
}

// readThrough makes the cache what the journal j leaves the tasks as, when
// it could not be applied now (failed). Its write has happened — the
// journal is durable and valid — so reads answer with it; writes are
// refused, with the reason, until an operation applies and removes it
// (each tries again: the cache is rebuilt by the next one).
func (s *FileStore) readThrough(j *journal.Journal, failed error) {
	p := &plan{}
	for _, id := range slices.Sorted(maps.Keys(j.Put)) {
		if t, err := decodeTask(ID(id), []byte(j.Put[id])); err == nil { // validated: it decodes
			p.put = append(p.put, t)
		}
	}
	for _, id := range j.Del {
		p.del = append(p.del, ID(id))
	}
	s.g.apply(p)
	s.scanned = false
	s.journalErr = fmt.Errorf("taskgraph: a write of several files has happened, but its journal %s could not be applied and removed (%w); every store reads the tasks as it leaves them, and no write is made until an operation applies it (each tries again)", filepath.Join(s.dir, journalFileName), failed)
}

func (s *FileStore) read(ctx context.Context, check []ID, fn func(*graph) error) error {
	if err := s.acquire(ctx, false); err != nil {
		return err
	}
	// The limits live in the meta file, which SetLimit changes without
	// the log: read it again, as every write does, when its stamp says it
	// changed, so that Board sees them.
	err := s.refreshMeta()
	if err == nil {
		if _, err = s.verify(check); err == nil {
			err = fn(s.g)
		}
	}
	s.afterUnlock(s.unlock())
	return err
}

func (s *FileStore) write(ctx context.Context, kind writeKind, mk func(*graph, time.Time) (*plan, error), done func(*graph, *plan)) error {
	var a *ahead
	if kind == writeOneTask {
		a = s.decideAhead(ctx, mk)
	}
	defer s.unusedAhead(a)
	if a != nil && s.cfg.afterAhead != nil {
		s.cfg.afterAhead()
	}
	if err := s.acquire(ctx, true); err != nil {
		return err
	}
	err := s.writeLocked(mk, done, a)
	s.afterUnlock(s.unlock())
	return err
}

func (s *FileStore) now() time.Time { return s.cfg.now().UTC() }

// writeLocked decides and commits a write under the exclusive lock: when
// it returns nil the write is durable. a is the write decided ahead, if
// any: it is used only if deciding again, at its time, gives the same
// file.
func (s *FileStore) writeLocked(mk func(*graph, time.Time) (*plan, error), done func(*graph, *plan), a *ahead) error {
	if s.journalErr != nil {
		return s.journalErr
	}
	// The meta file is read under the lock before every write: another
	// process may have raised it, or someone may have fixed it.
	if err := s.readMeta(); err != nil {
		return err
	}
	if s.metaErr != nil {
		return s.metaErr
	}
	if s.g.alloc != nil {
		if err := s.readIDs(); err != nil {
			return err
		}
	}
	if a != nil && a.stale(s.now()) {
		s.unusedAhead(a)
		a = nil
	}
	for attempt := 0; ; attempt++ {
		now := s.now()
		if a != nil {
			now = a.now
		}
		p, err := mk(s.g, now)
		if a != nil && (err != nil || !a.matches(p)) {
			// Something it read changed: decide at the present time.
			s.unusedAhead(a)
			a = nil
			attempt--
			continue
		}
		if err != nil {
			return err
		}
		// Prove that what the decision read is what is on disk; if a
		// writer that bypasses the lock changed it, decide again.
		changed, err := s.verify(p.read)
		if err != nil {
			return err
		}
		if changed {
			s.unusedAhead(a)
			a = nil
			if attempt < 3 {
				continue
			}
			return fmt.Errorf("taskgraph: task files keep changing under the lock (a program writing .tasks without taking it?): %w", ErrConflict)
		}
		if err := s.recordIDs(p); err != nil {
			return withHint(err)
		}
		if err := s.commit(p, a); err != nil {
			return withHint(err)
		}
		s.stats.writes.Add(1)
		if a != nil && a.used {
			s.stats.ahead.Add(1)
		}
		s.hub.change(s.g, p.changedIDs(), func() { s.g.apply(p) })
		done(s.g, p)
		return nil
	}
}

// withHint adds what to do to the errors a full or read-only disk gives.
// Only an error before the commit point left nothing half written.
func withHint(err error) error {
	full := errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
	switch {
	case full && errors.Is(err, ErrUnknownOutcome):
		return fmt.Errorf("%w (the disk is full: free space, then re-read the tasks before retrying)", err)
	case full:
		return fmt.Errorf("%w (the disk is full: free space and retry; nothing was half written)", err)
	case errors.Is(err, syscall.EROFS), errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w (is the directory writable?)", err)
	}
	return err
}

func taskFileName(id ID) string { return filenames.Task(int64(id)) }

// parseTaskFileName returns the id of a canonical task file name.
func parseTaskFileName(name string) (ID, bool) {
	n, ok := filenames.ParseTask(name)
	return ID(n), ok
}

// verify reloads every listed task whose file changed since it was cached,
// and reports whether any had.
func (s *FileStore) verify(ids []ID) (bool, error) {
	changed := false
	for _, id := range ids {
		fi, err := s.root.Lstat(taskFileName(id))
		old, cached := s.stamps[id]
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if !cached {
				continue
			}
		case err != nil:
			return false, fmt.Errorf("taskgraph: %w", err)
		case cached && stampOf(fi) == old:
			continue
		}
		changed = true
		if err := s.reload(id); err != nil {
			return false, err
		}
	}
	return changed, nil
}

// reload reads one task file into the cache, or drops it if it is gone. A
// failure to read it (not a corrupt file) is returned and nothing is
// cached, so the next operation reads the file again.
func (s *FileStore) reload(id ID) error {
	fi, t, err := s.load(id)
	if err != nil && !errors.Is(err, ErrCorrupt) {
		delete(s.stamps, id)
		return err
	}
	s.install(id, fi, t, err)
	return nil
}

// install caches what load returned: a task, a corrupt file, or no file.
func (s *FileStore) install(id ID, fi os.FileInfo, t *Task, err error) {
	// An id that was ever seen was allocated, even if its task is gone by
	// now: it must never be allocated again.
	s.g.maxID = max(s.g.maxID, id)
	s.hub.change(s.g, []ID{id}, func() {
		switch {
		case fi == nil:
			s.g.remove(id)
			delete(s.stamps, id)
		case err != nil:
			s.g.markBroken(id, err)
			s.stamps[id] = stampOf(fi)
		default:
			s.g.put(t)
			s.stamps[id] = stampOf(fi)
		}
	})
}

// load reads and decodes one task file. fi is nil if the file does not
// exist; a file that exists but cannot be used yields a *CorruptError; a
// failure to read it, any other error.
func (s *FileStore) load(id ID) (os.FileInfo, *Task, error) {
	return loadTaskFile(s.fs, s.root, s.dir, id)
}

func loadTaskFile(fsys fileSystem, root *os.Root, dir string, id ID) (os.FileInfo, *Task, error) {
	// The open refuses to follow a symlink, so a task file is always the
	// file itself.
	fi, data, err := readFile(fsys, root, dir, taskFileName(id), maxFileSize)
	if fi == nil || err != nil {
		return fi, nil, err
	}
	t, err := decodeTask(id, data)
	if err != nil {
		return fi, nil, &CorruptError{Path: filepath.Join(dir, taskFileName(id)), Err: err}
	}
	return fi, t, nil
}

// The Store methods of FileStore. Each runs the shared implementation (ops) under the directory lock; a write is durable when it returns.

// Create adds a pending task; see [Store.Create].
func (s *FileStore) Create(ctx context.Context, nt NewTask) (Task, error) {
	return ops{s}.Create(ctx, nt)
}

// Get returns one task; see [Store.Get].
func (s *FileStore) Get(ctx context.Context, id ID) (Task, error) { return ops{s}.Get(ctx, id) }

// CreatePlan creates many tasks at once, all or nothing; see [Store.CreatePlan].
func (s *FileStore) CreatePlan(ctx context.Context, tasks []NewTask) ([]Task, error) {
	return ops{s}.CreatePlan(ctx, tasks)
}

// List returns the tasks that match filters, by id; see [Store.List].
func (s *FileStore) List(ctx context.Context, filters ...Filter) ([]Task, error) {
	return ops{s}.List(ctx, filters...)
}

// Update applies a partial update; see [Store.Update].
func (s *FileStore) Update(ctx context.Context, id ID, p Patch) (Task, error) {
	return ops{s}.Update(ctx, id, p)
}

// Claim moves a ready task to InProgress under owner; see [Store.Claim].
func (s *FileStore) Claim(ctx context.Context, id ID, owner string, opts ...ClaimOption) (Task, error) {
	return ops{s}.Claim(ctx, id, owner, opts...)
}

// ClaimNext claims the first ready task in claim order
// ([Rulebook.ClaimOrder]); see [Store.ClaimNext] and [WithLabels].
func (s *FileStore) ClaimNext(ctx context.Context, owner string, opts ...ClaimOption) (Task, error) {
	return ops{s}.ClaimNext(ctx, owner, opts...)
}

// Renew extends the lease of a task owner holds; see [Store.Renew].
func (s *FileStore) Renew(ctx context.Context, id ID, owner string, ttl time.Duration) (Task, error) {
	return ops{s}.Renew(ctx, id, owner, ttl)
}

// Complete finishes a task and reports what it unblocked; see [Store.Complete].
func (s *FileStore) Complete(ctx context.Context, id ID, owner string, opts ...CompleteOption) (Completion, error) {
	return ops{s}.Complete(ctx, id, owner, opts...)
}

// Fail records that a task in progress failed; see [Store.Fail].
func (s *FileStore) Fail(ctx context.Context, id ID, owner, reason string) (Task, error) {
	return ops{s}.Fail(ctx, id, owner, reason)
}

// Cancel records that a task will not be done; see [Store.Cancel].
func (s *FileStore) Cancel(ctx context.Context, id ID, reason string) (Task, error) {
	return ops{s}.Cancel(ctx, id, reason)
}

// Reopen returns a finished task to Pending; see [Store.Reopen].
func (s *FileStore) Reopen(ctx context.Context, id ID) (Task, error) {
	return ops{s}.Reopen(ctx, id)
}

// Release returns a claimed task to Pending; see [Store.Release].
func (s *FileStore) Release(ctx context.Context, id ID, owner string) (Task, error) {
	return ops{s}.Release(ctx, id, owner)
}

// SetLimit caps the tasks carrying label that may be in progress at once;
// see [Limiter]. The limits are kept in the meta file, which git commits
// with the graph.
func (s *FileStore) SetLimit(ctx context.Context, label string, n int) error {
	if err := Rules.LimitArgs(label, n); err != nil {
		return err
	}
	if err := s.acquire(ctx, true); err != nil {
		return err
	}
	err := s.commitMeta(func() (undo func()) {
		old := s.g.limits
		limits := copyLimits(old)
		if n == 0 {
			delete(limits, label)
		} else {
			limits[label] = n
		}
		if len(limits) == 0 {
			limits = nil
		}
		s.g.limits = limits
		return func() { s.g.limits = old }
	})
	s.afterUnlock(s.unlock())
	return err
}

// commitMeta writes the meta file alone (the limits, the liveness
// defaults), with the commit point of any write: announced, renamed into
// place, the directory fsynced, then recorded. change makes the new
// settings the graph's, on the meta file as just read, and returns what
// undoes that if the file is not written.
func (s *FileStore) commitMeta(change func() (undo func())) error {
	if err := s.readMeta(); err != nil {
		return err
	}
	if s.metaErr != nil {
		return s.metaErr
	}
	if err := logFailed(s.log.Prepare()); err != nil {
		return err
	}
	if err := s.announce(nil); err != nil {
		return err
	}
	undo := change()
	if err := s.writeMeta(s.hwm); err != nil {
		undo() // not written: as before
		return err
	}
	if err := s.commitPoint(s.syncDir); err != nil {
		return err
	}
	s.recordLog(&journal.Journal{})
	return nil
}

// SetLivenessDefault sets label's default liveness; see
// [LivenessDefaulter]. The defaults are kept in the meta file, beside the
// limits.
func (s *FileStore) SetLivenessDefault(ctx context.Context, label string, d LivenessDefault) error {
	if err := Rules.LivenessDefaultArgs(label, d); err != nil {
		return err
	}
	if err := s.acquire(ctx, true); err != nil {
		return err
	}
	err := s.commitMeta(func() (undo func()) {
		old := s.g.liveness
		s.g.liveness = withDefault(old, label, d)
		return func() { s.g.liveness = old }
	})
	s.afterUnlock(s.unlock())
	return err
}

// LivenessDefaults returns the liveness defaults by label; see
// [LivenessDefaulter].
func (s *FileStore) LivenessDefaults(ctx context.Context) (map[string]LivenessDefault, error) {
	var out map[string]LivenessDefault
	err := s.read(ctx, nil, func(g *graph) error {
		out = copyLiveness(g.liveness)
		return nil
	})
	return out, err
}

// Limits returns the concurrency limits by label; see [Limiter].
func (s *FileStore) Limits(ctx context.Context) (map[string]int, error) {
	var out map[string]int
	err := s.read(ctx, nil, func(g *graph) error {
		out = copyLimits(g.limits)
		return nil
	})
	return out, err
}

// Note appends a note to a task; see [Noter].
func (s *FileStore) Note(ctx context.Context, id ID, author, text string) (Task, error) {
	return ops{s}.Note(ctx, id, author, text)
}

// Delete removes a task; see [Store.Delete].
func (s *FileStore) Delete(ctx context.Context, id ID, opts ...DeleteOption) error {
	return ops{s}.Delete(ctx, id, opts...)
}

// Board partitions the graph by state; see [Store.Board].
func (s *FileStore) Board(ctx context.Context, filters ...Filter) (Board, error) {
	return ops{s}.Board(ctx, filters...)
}

// Load adds tasks with their ids, all or nothing; see [Loader].
func (s *FileStore) Load(ctx context.Context, tasks []Task) error { return ops{s}.Load(ctx, tasks) }
