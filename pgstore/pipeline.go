// Statements sent in a pipeline of pgconn's, for a round trip in which
// each part is a transaction of its own (ended by a Sync), which pgx's
// batches (one Sync for the whole batch) do not send.

package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// preparedStatement is a statement prepared on a connection, with the
// arguments of one execution encoded as it takes them.
type preparedStatement struct {
	sd            *pgconn.StatementDescription
	values        [][]byte
	formats       []int16
	resultFormats []int16
}

// prepare prepares sql on c (once per connection: pgx keeps the
// description, named by the SQL's digest) and encodes args for it.
func prepare(ctx context.Context, c *pgx.Conn, sql string, args ...any) (*preparedStatement, error) {
	sd, err := c.Prepare(ctx, sql, sql)
	if err != nil {
		return nil, err
	}
	if len(args) != len(sd.ParamOIDs) {
		return nil, errors.New("pgstore: a prepared statement's arguments do not match its parameters")
	}
	m := c.TypeMap()
	ps := &preparedStatement{sd: sd, values: make([][]byte, len(args)), formats: make([]int16, len(args)), resultFormats: make([]int16, len(sd.Fields))}
	for i, a := range args {
		ps.formats[i] = m.FormatCodeForOID(sd.ParamOIDs[i])
		if ps.values[i], err = m.Encode(sd.ParamOIDs[i], ps.formats[i], a, nil); err != nil {
			return nil, err
		}
	}
	for i, f := range sd.Fields {
		ps.resultFormats[i] = m.FormatCodeForOID(f.DataTypeOID)
	}
	return ps, nil
}

// send queues the statement's execution in p.
func (ps *preparedStatement) send(p *pgconn.Pipeline) {
	p.SendQueryStatement(ps.sd, ps.values, ps.formats, ps.resultFormats)
}

// row returns the next result of p, that of the statement, as a row: its
// Scan reads it and closes it, and returns pgx.ErrNoRows if it has none.
func (ps *preparedStatement) row(c *pgx.Conn, p *pgconn.Pipeline) pgx.Row {
	res, err := p.GetResults()
	if err != nil {
		return oneRow{err: err}
	}
	rr, ok := res.(*pgconn.ResultReader)
	if !ok {
		return oneRow{err: errors.New("pgstore: a statement's result is missing from the pipeline")}
	}
	return oneRow{rows: pgx.RowsFromResultReader(c.TypeMap(), rr)}
}

// unprepare forgets, after err, the statements sqls prepared on c if err
// says the server no longer has them as prepared (a DISCARD) or can no
// longer run them as prepared (the table's columns changed): the next
// call prepares them again, as pgx does with its own cache.
func unprepare(ctx context.Context, c *pgx.Conn, err error, sqls ...string) {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "26000" && pe.Code != "0A000" || c.IsClosed() {
		return
	}
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	for _, sql := range sqls {
		_ = c.Deallocate(cctx, sql)
	}
}
