package pgstore_test

import (
	"context"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil/pgtest"
	"github.com/jackc/pgx/v5"
)

// BenchmarkLayout measures the choice docs/SHARED.md made: the same
// 100,000 directory entries (1,000 directories of 100) and 100,000 inode
// records kept as rows of one key/value table in the schema package's
// encoding, or in typed tables. It reports the time of a directory
// listing and of an inode read (one statement each, so one round trip),
// and the bytes per record of table plus index.
//
//	go test ./internal/meta/pgstore -run '^$' -bench Layout -benchtime 2000x
func BenchmarkLayout(b *testing.B) {
	srv := pgtest.Start(b)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, srv.CreateDB(b, "layout"))
	must(b, err)
	defer c.Close(ctx)
	// A record of ~110 bytes stands for an inode's; int8send is big-endian,
	// as the schema package's integers are.
	_, err = c.Exec(ctx, `
		CREATE TABLE kv (k bytea PRIMARY KEY, v bytea NOT NULL, ver bigint NOT NULL);
		INSERT INTO kv SELECT '\x64'::bytea || int8send(d) || convert_to('file-name-' || n, 'UTF8'),
			'\x01'::bytea || int8send(d * 1000 + n) || '\x08', 1
			FROM generate_series(1, 1000) d, generate_series(1, 100) n;
		INSERT INTO kv SELECT '\x69'::bytea || int8send(i),
			decode(repeat(md5(i::text), 3) || substr(md5(i::text), 1, 28), 'hex'), 1
			FROM generate_series(1, 100000) i;
		CREATE TABLE dirents (parent bigint, name bytea, ino bigint NOT NULL, type smallint NOT NULL, PRIMARY KEY (parent, name));
		INSERT INTO dirents SELECT d, convert_to('file-name-' || n, 'UTF8'), d * 1000 + n, 8
			FROM generate_series(1, 1000) d, generate_series(1, 100) n;
		CREATE TABLE inodes (ino bigint PRIMARY KEY, mode int, uid int, gid int, nlink int, size bigint,
			mapped bigint, rdev bigint, atime bigint, mtime bigint, ctime bigint, btime bigint, version bigint, target bytea);
		INSERT INTO inodes SELECT i, 33188, 1000, 1000, 1, i * 10, i * 10, 0, i, i, i, i, i, NULL
			FROM generate_series(1, 100000) i;`)
	must(b, err)
	_, err = c.Exec(ctx, `VACUUM ANALYZE`)
	must(b, err)
	var kvBytes, dirBytes, inoBytes float64
	must(b, c.QueryRow(ctx, `SELECT pg_total_relation_size('kv'), pg_total_relation_size('dirents'), pg_total_relation_size('inodes')`).Scan(&kvBytes, &dirBytes, &inoBytes))
	b.Logf("bytes per record, table + index: kv %.0f (dirents and inodes alike), dirents %.0f, inodes %.0f",
		kvBytes/200000, dirBytes/100000, inoBytes/100000)
	key := func(prefix byte, n int64) []byte {
		k := []byte{prefix, 0, 0, 0, 0, 0, 0, 0, 0}
		for i := 8; i > 0; i-- {
			k[i], n = byte(n), n>>8
		}
		return k
	}
	rows := func(b *testing.B, want int, sql string, args ...any) {
		r, err := c.Query(ctx, sql, args...)
		must(b, err)
		n := 0
		for r.Next() {
			n++
		}
		must(b, r.Err())
		if n != want {
			b.Fatalf("%d rows, want %d", n, want)
		}
	}
	b.Run("kv/list100", func(b *testing.B) {
		for i := range b.N {
			d := int64(1 + i%1000)
			rows(b, 100, `SELECT k, v FROM kv WHERE k >= $1 AND k < $2 ORDER BY k LIMIT 1024`, key('d', d), key('d', d+1))
		}
	})
	b.Run("tables/list100", func(b *testing.B) {
		for i := range b.N {
			rows(b, 100, `SELECT name, ino, type FROM dirents WHERE parent = $1 ORDER BY name`, int64(1+i%1000))
		}
	})
	b.Run("kv/inode", func(b *testing.B) {
		for i := range b.N {
			rows(b, 1, `SELECT v FROM kv WHERE k = $1`, key('i', int64(1+i*7%100000)))
		}
	})
	b.Run("tables/inode", func(b *testing.B) {
		for i := range b.N {
			rows(b, 1, `SELECT * FROM inodes WHERE ino = $1`, int64(1+i*7%100000))
		}
	})
}
