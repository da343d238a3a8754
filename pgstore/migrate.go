// Schema migrations: the versioned SQL files embedded in the package, and
// applying those a database lacks, one process at a time.

package pgstore

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrateLockID is the advisory lock that serialises migrations.
const migrateLockID = 0x7461736b67726170 // "taskgrap"

// Migrate brings the schema up to date. It is safe to run from many
// processes at once; Open calls it.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrateLockID)); err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	defer func() {
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		if _, err := conn.Exec(cctx, `SELECT pg_advisory_unlock($1)`, int64(migrateLockID)); err != nil {
			// The lock belongs to the session: end it rather than hand a
			// connection that still holds it back to the pool.
			conn.Conn().Close(cctx)
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS taskgraph_schema_migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	var current int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM taskgraph_schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	files, _ := migrations.ReadDir("migrations")
	for _, f := range files { // named NNN_what.sql, in order
		var version int
		if _, err := fmt.Sscanf(f.Name(), "%d_", &version); err != nil || version <= current {
			continue
		}
		sql, _ := migrations.ReadFile("migrations/" + f.Name())
		err := retry(ctx, func() error {
			return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, string(sql)); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `INSERT INTO taskgraph_schema_migrations (version) VALUES ($1)`, version)
				return err
			})
		})
		if err != nil {
			return fmt.Errorf("pgstore: migration %s: %w", f.Name(), err)
		}
	}
	return nil
}

// schemaVersion is the version of the newest embedded migration.
func schemaVersion() int {
	files, _ := migrations.ReadDir("migrations")
	latest := 0
	for _, f := range files {
		var version int
		if _, err := fmt.Sscanf(f.Name(), "%d_", &version); err == nil {
			latest = max(latest, version)
		}
	}
	return latest
}
