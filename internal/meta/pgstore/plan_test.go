package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/jackc/pgx/v5"
)

// A volume's table starts empty and grows while the same prepared
// statements run on it. PostgreSQL gives a prepared statement a generic
// plan after five executions, and one made while the table was small
// scanned the whole table on every later lookup (a fresh volume with
// 4 GiB written: 3,855 lookups of a few keys took 59 s of the server's
// CPU, 15 ms each). On the store's connections the lookups must use the
// table's index however small the table was when they were first planned.
func testLookupsUseTheIndexAsTheTableGrows(t *testing.T, e *env) {
	ctx := context.Background()
	s, err := pgstore.Open(ctx, pgstore.Options{URL: e.dsn, Schema: e.schema(), Create: true, CacheBytes: -1})
	must(t, err)
	defer s.Close()
	fill(t, s, 500)
	// 14 keys, as a GetMany of a FUSE write's chunks; none is stored, as
	// the deletion's plan is run too. (Statements of the extended protocol
	// cannot take parameters inside EXPLAIN: a literal array.)
	var keys []string
	for i := range 14 {
		keys = append(keys, fmt.Sprintf(`'\x%x'::bytea`, fmt.Sprintf("k%05dx", i*300)))
	}
	arg := "ARRAY[" + strings.Join(keys, ",") + "]"
	// One connection throughout: prepared statements belong to it.
	must(t, s.OnConn(ctx, func(c *pgx.Conn) error {
		// As autovacuum does soon after the first rows: statistics of a
		// small table, in which a sequential scan is the cheapest plan.
		if _, err := c.Exec(ctx, "ANALYZE "+s.Schema()+".kv"); err != nil {
			return err
		}
		for i, sql := range s.LookupStatements() {
			name := fmt.Sprintf("lookup%d", i)
			if _, err := c.Exec(ctx, fmt.Sprintf("PREPARE %s(bytea[]) AS %s", name, sql)); err != nil {
				return err
			}
			defer c.Exec(ctx, "DEALLOCATE "+name)
			for range 8 { // past the five custom plans
				if _, err := c.Exec(ctx, "EXPLAIN ANALYZE EXECUTE "+name+"("+arg+")"); err != nil {
					return err
				}
			}
		}
		fill(t, s, 30000) // on other connections of the pool, before the next ANALYZE
		for i, sql := range s.LookupStatements() {
			rows, err := c.Query(ctx, fmt.Sprintf("EXPLAIN EXECUTE lookup%d(%s)", i, arg))
			if err != nil {
				return err
			}
			plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			if p := strings.Join(plan, "\n"); strings.Contains(p, "Seq Scan") {
				t.Errorf("%s\nscans the whole 30,000-row table:\n%s", sql, p)
			}
		}
		return nil
	}))
}
