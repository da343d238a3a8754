package board

import (
	"bytes"
	"context"
	"io/fs"
)

// StaticFiles is the embedded tree the board serves under /static/.
func StaticFiles() fs.FS {
	sub, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err)
	}
	return sub
}

// Builds returns how many times the server has computed the board.
func (s *Server) Builds() int64 { return s.hub.builds.Load() }

// SnapshotJSON returns the current state both as the JSON the server
// sends and as a Snapshot.
func (s *Server) SnapshotJSON(ctx context.Context) ([]byte, Snapshot, error) {
	st, err := s.hub.current(ctx)
	if err != nil {
		return nil, Snapshot{}, err
	}
	return bytes.Join(st.fullJSON(s), nil), st.snapshot(s), nil
}

// FirstSnapshot makes the board's state and its JSON, as for a server's
// first page, and returns the JSON's size.
func (s *Server) FirstSnapshot(ctx context.Context) (int, error) {
	st, err := s.hub.current(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range st.fullJSON(s) {
		n += len(c)
	}
	return n, nil
}

// Nexts returns how many states the server has made from the one before
// by the watch's events, rather than from the store.
func (s *Server) Nexts() int64 { return s.hub.nexts.Load() }

// Current returns the server's current state as a Snapshot, as it is:
// not brought up to date first.
func (s *Server) Current() Snapshot { return s.hub.cur.Load().snapshot(s) }
