// Watch on a FileStore: following the directory (inotify, or polling)
// and turning what changed into events.

package taskgraph

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchPoll is how often Watch looks at the directory when inotify is not
// available.
const watchPoll = 250 * time.Millisecond

// Watch reports every change to the graph, by this or any other process,
// until ctx is done, the store is closed or a read of the directory fails;
// then it closes the channel. Unless ctx is done, its last event is of kind
// Ended, with the reason in Event.Err (ErrClosed once the store is closed);
// the receiver should keep receiving until the channel closes. Event.Task
// has every field but Blocks.
//
// It uses inotify (through fsnotify) on the directory the store opened,
// through its handle where the system allows (so a directory renamed
// after Open is still watched), and falls back to polling where that is
// unavailable or fails. Changes that happen while the receiver is busy
// are coalesced: a task written three times may be reported once, with
// its latest content. An agent that waits for work can block on Unblocked
// events instead of polling.
func (s *FileStore) Watch(ctx context.Context) (<-chan Event, error) {
	var (
		events <-chan Event
		end    func(error)
	)
	// Subscribed under the lock: every change after the view the watch
	// starts from is published to it.
	err := s.read(ctx, nil, func(g *graph) error {
		events, end = s.hub.watch(ctx, g.timedTasks(), s.cfg.now, s.done)
		// Close waits for the watch's two goroutines, so that the
		// notifier's handle on the directory is gone when it returns
		// (Windows cannot remove a directory a handle is open on).
		s.inflight.Add(2)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// This store's own writes are published as they happen. Other
	// processes' writes are found by bringing the cache up to date
	// whenever the directory may have changed: that reads only the new
	// change-log records, so a watch costs what the changes cost, not
	// what the graph does.
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	stop := make(chan struct{})
	w, path := s.notifier()
	go func() {
		defer s.inflight.Done()
		s.wakeUp(w, path, poke, stop)
	}()
	go func() {
		defer s.inflight.Done()
		defer close(stop)
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.done:
				return // the watcher reports ErrClosed
			case <-wake:
			}
			if err := s.read(ctx, nil, func(*graph) error { return nil }); err != nil {
				if ctx.Err() == nil && !errors.Is(err, ErrClosed) {
					end(err)
				}
				return
			}
		}
	}()
	return events, nil
}

// notifier returns an fsnotify watcher of the store's directory and the
// path it watches, or nil if the watch must poll.
func (s *FileStore) notifier() (*fsnotify.Watcher, string) {
	if s.cfg.watchPollOnly {
		return nil, ""
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		s.cfg.log.Warn("taskgraph: watch polls the directory: no file notifier", "dir", s.dir, "poll", watchPoll, "err", err)
		return nil, ""
	}
	path, ok := s.addWatch(w)
	if !ok {
		w.Close()
		s.cfg.log.Warn("taskgraph: watch polls the directory: it cannot be watched by path", "dir", s.dir, "poll", watchPoll)
		return nil, ""
	}
	return w, path
}

// addWatch adds the store's directory to w, by a path that names it (see
// handlePath), and reports the path.
func (s *FileStore) addWatch(w *fsnotify.Watcher) (string, bool) {
	path, ok := s.handlePath()
	if !ok || w.Add(path) != nil {
		return "", false
	}
	// The path is checked again: it must have named this directory when
	// the watch was added.
	if p, ok := s.handlePath(); !ok || p != path {
		w.Remove(path)
		return "", false
	}
	return path, true
}

// handlePath returns a path that names the store's directory now: its
// handle in /proc/self/fd where the system has one (Linux), else the path
// Open was given if that is still the same directory.
func (s *FileStore) handlePath() (string, bool) {
	dfi, err := s.dirf.Stat()
	if err != nil {
		return "", false
	}
	for _, p := range []string{fmt.Sprintf("/proc/self/fd/%d", s.dirf.Fd()), s.dir} {
		if fi, err := os.Stat(p); err == nil && os.SameFile(fi, dfi) {
			return p, true
		}
	}
	return "", false
}

// wakeUp pokes a watch whenever the directory may have changed — on every
// event of w (watching path), or every watchPoll if w is nil or fails —
// until stop is closed.
func (s *FileStore) wakeUp(w *fsnotify.Watcher, path string, poke func(), stop <-chan struct{}) {
	if w != nil {
		defer w.Close()
	events:
		for {
			select {
			case <-stop:
				return
			case e, ok := <-w.Events:
				if !ok {
					break events
				}
				if e.Name == path && e.Has(fsnotify.Rename) {
					// The directory itself was renamed, and fsnotify
					// drops the watch of a moved path: watch it again
					// through the handle, where the system allows.
					if path, ok = s.addWatch(w); !ok {
						break events
					}
				}
				poke()
			case err, ok := <-w.Errors:
				if !ok {
					break events
				}
				s.cfg.log.Warn("taskgraph: the file notifier lost events; looking at every file", "dir", s.dir, "err", err)
				poke() // an overflow lost events: look at everything
			}
		}
		s.cfg.log.Warn("taskgraph: the file notifier stopped; watch polls the directory", "dir", s.dir, "poll", watchPoll)
		poke() // the notifier stopped: look at everything, then poll
	}
	tick := time.NewTicker(watchPoll)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			poke()
		}
	}
}
