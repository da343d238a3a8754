package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// SchemaVersion is the version of the newest embedded migration, which a
// migrated database is at.
var SchemaVersion = schemaVersion

// ClaimReadySQL is the statement of ClaimNext's one-statement claim, for a
// test of its plan.
var ClaimReadySQL = claimReadySQL

// CompleteSQL is the statement of Complete by the task's holder, for a test
// of its plan.
var CompleteSQL = completeSQL

// BlocksOf, DependentsSQL and UnblockedSQL look a task's dependents up,
// and BlockersSQL its blockers, for a test of their plans.
const (
	BlocksOf      = blocksOf
	DependentsSQL = dependentsSQL
)

var (
	UnblockedSQL = unblockedSQL
	BlockersSQL  = blockersSQL
)

// ReadyCondition is the condition of a ready task, for a test of its
// plan.
var ReadyCondition = readyCondition

// CommitWith runs b through a write's transaction on conn and commits it
// with a notification, as a write's last round trip does.
func CommitWith(ctx context.Context, conn *pgx.Conn, b *pgx.Batch) error {
	return (&lazyTx{conn: conn}).commitWith(ctx, b, notifySQL, "pgstore-test")
}

// DecodeFlat is decodeFlat, for FuzzDecodeFlat and TestDecodeFlatFromPostgres.
func DecodeFlat[T any](data []byte, out *[]T) bool { return decodeFlat(data, out) }

// NextByLabelsSQL and NextUnderSQL are the statements of ClaimNext's
// transaction that pick by streams, for a test of the pages they read.
var (
	NextByLabelsSQL = nextByLabelsSQL
	NextUnderSQL    = nextUnderSQL
)
