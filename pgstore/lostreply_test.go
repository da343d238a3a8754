package pgstore_test

import (
	"context"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/pgstore"
)

// holdProxy forwards TCP connections to PostgreSQL; while hold is set, it
// keeps the server's answers back (the server still gets and runs what
// the client sends): a reply lost on the way, for a client whose
// deadline passes first.
type holdProxy struct {
	ln   net.Listener
	hold atomic.Bool
}

func newHoldProxy(t *testing.T, server string) *holdProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hp := &holdProxy{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go hp.forward(c, server)
		}
	}()
	return hp
}

func (hp *holdProxy) forward(c net.Conn, server string) {
	defer c.Close()
	s, err := net.Dial("tcp", server)
	if err != nil {
		return
	}
	defer s.Close()
	go func() { io.Copy(s, c); s.Close() }()
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		for hp.hold.Load() {
			time.Sleep(10 * time.Millisecond)
		}
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// A write whose answer is lost after it went out with its COMMIT returns
// an error matching ErrUnknownOutcome whenever the write stands, never
// one that says it did not happen: Complete by the holder (one round trip,
// its COMMIT in it), Complete by the Rulebook's transaction (whose answer
// is lost at its first round trip, before any COMMIT is sent: any error
// will do, and the task stays in progress), and ClaimNext (pipelined, or
// one batch in the simple protocol).
func TestLostReplyIsUnknownOutcome(t *testing.T) {
	pool(t) // skips without a database
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		t.Run(mode.String(), func(t *testing.T) { lostReplies(t, mode) })
	}
}

func lostReplies(t *testing.T, mode pgx.QueryExecMode) {
	direct := pool(t)
	var hp *holdProxy
	p := poolConfigured(t, func(cfg *pgxpool.Config) {
		hp = newHoldProxy(t, net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))))
		cfg.ConnConfig.Host = "127.0.0.1"
		cfg.ConnConfig.Port = uint16(hp.ln.Addr().(*net.TCPAddr).Port)
		cfg.ConnConfig.DefaultQueryExecMode = mode
		oneSession(cfg) // its statements prepared by the warm-up
	})
	g := graphName(t)
	s, err := pgstore.Open(ctx, p, g)
	require.NoError(t, err)
	t.Cleanup(func() { direct.Exec(ctx, `DELETE FROM taskgraph_graphs WHERE name = $1`, g) })
	status := func(id taskgraph.ID) string {
		var st string
		require.NoError(t, direct.QueryRow(ctx, `SELECT status FROM taskgraph_tasks WHERE graph = $1 AND id = $2`, g, int64(id)).Scan(&st))
		return st
	}
	lost := func(op func(ctx context.Context) error) error {
		hp.hold.Store(true)
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		err := op(cctx)
		cancel()
		time.Sleep(200 * time.Millisecond) // the server has long run what it got
		hp.hold.Store(false)
		return err
	}
	for _, owner := range []string{"w", ""} {
		// Warm-up: the connection prepares this kind of Complete's statements.
		wu, err := s.Create(ctx, taskgraph.NewTask{Subject: "warm-up"})
		require.NoError(t, err)
		_, err = s.Claim(ctx, wu.ID, "w")
		require.NoError(t, err)
		_, err = s.Complete(ctx, wu.ID, owner)
		require.NoError(t, err)
		a, err := s.Create(ctx, taskgraph.NewTask{Subject: "a"})
		require.NoError(t, err)
		_, err = s.Claim(ctx, a.ID, "w")
		require.NoError(t, err)
		err = lost(func(ctx context.Context) error { _, err := s.Complete(ctx, a.ID, owner); return err })
		require.Error(t, err, "owner %q: the answer never came", owner)
		if owner == "w" {
			require.Equal(t, "completed", status(a.ID), "the holder's Complete went out with its COMMIT")
		} else {
			require.Equal(t, "in_progress", status(a.ID), "the Rulebook's first round trip holds no COMMIT")
		}
		if status(a.ID) == "completed" {
			require.ErrorIs(t, err, taskgraph.ErrUnknownOutcome, "owner %q: the completion stands", owner)
		}
	}
	b1, err := s.Create(ctx, taskgraph.NewTask{Subject: "b1"})
	require.NoError(t, err)
	b2, err := s.Create(ctx, taskgraph.NewTask{Subject: "b2"})
	require.NoError(t, err)
	_, err = s.ClaimNext(ctx, "w") // warm-up: b1
	require.NoError(t, err)
	err = lost(func(ctx context.Context) error { _, err := s.ClaimNext(ctx, "w"); return err })
	require.Equal(t, "in_progress", status(b1.ID))
	require.Equal(t, "in_progress", status(b2.ID), "the claim went out")
	require.ErrorIs(t, err, taskgraph.ErrUnknownOutcome, "the claim stands")
}
