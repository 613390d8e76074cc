package pgstore

import (
	"context"
	"fmt"
	"strings"
)

// FormatVersion is the layout of a volume's schema this code writes and
// reads; a schema of a newer layout is refused at open.
const FormatVersion = 1

// stmts are the statements on one volume's schema. Schema names need no
// quoting (checkSchemaName), so they are spliced in as they are.
type stmts struct {
	get, getMany                   string
	asc, ascTo, desc, descFrom     string
	around, aroundTo               string
	nextval, delRange, delFrom     string
	delKeys, upsert, usage, format string
	reserve, guard                 string
	markBump, markTouch, markRead  string
	markSet, markDel, marksReap    string
	txLock, notify, lease          string
	sessionExists                  string
	changesLast, changesSince      string
	changesAdd, changesPrune       string
	changesSentinel, epochNow      string

	sessionsLock, sessionsReap, sessionsAdd, sessionLock  string
	sessionsBeat, sessionsMount, sessionsDel, sessionsAll string
}

func newStmts(schema string) *stmts {
	r := strings.NewReplacer("S.", schema+".", "'S'", "'"+schema+"'")
	q := func(s string) string { return r.Replace(s) }
	st := &stmts{
		get:      q(`SELECT v FROM S.kv WHERE k = $1`),
		getMany:  q(`SELECT k, v FROM S.kv WHERE k = ANY($1::bytea[])`),
		asc:      q(`SELECT k, v FROM S.kv WHERE k >= $1 ORDER BY k LIMIT $2`),
		ascTo:    q(`SELECT k, v FROM S.kv WHERE k >= $1 AND k < $2 ORDER BY k LIMIT $3`),
		desc:     q(`SELECT k, v FROM S.kv WHERE k >= $1 ORDER BY k DESC LIMIT $2`),
		descFrom: q(`SELECT k, v FROM S.kv WHERE k < $1 AND k >= $2 ORDER BY k DESC LIMIT $3`),
		// Both sides of a key at once: a seek below it and the moves
		// forward that follow (pager.around).
		around: q(`(SELECT k, v FROM S.kv WHERE k < $1 AND k >= $2 ORDER BY k DESC LIMIT $3)
			UNION ALL (SELECT k, v FROM S.kv WHERE k >= $1 ORDER BY k LIMIT $4)`),
		aroundTo: q(`(SELECT k, v FROM S.kv WHERE k < $1 AND k >= $2 ORDER BY k DESC LIMIT $3)
			UNION ALL (SELECT k, v FROM S.kv WHERE k >= $1 AND k < $5 ORDER BY k LIMIT $4)`),
		nextval:  q(`SELECT nextval('S.version')`),
		delRange: q(`DELETE FROM S.kv WHERE k >= $1 AND k < $2`),
		delFrom:  q(`DELETE FROM S.kv WHERE k >= $1`),
		delKeys:  q(`DELETE FROM S.kv WHERE k = ANY($1::bytea[])`),
		// The keys come sorted, so that concurrent commits lock rows in
		// one order.
		upsert: q(`INSERT INTO S.kv (k, v, ver)
			SELECT k, v, currval('S.version') FROM unnest($1::bytea[], $2::bytea[]) AS t(k, v)
			ON CONFLICT (k) DO UPDATE SET v = excluded.v, ver = excluded.ver`),
		usage: q(`SELECT coalesce(sum(pg_total_relation_size(oid)), 0)::bigint FROM pg_class
			WHERE relnamespace = 'S'::regnamespace AND relkind IN ('r', 'S')`),
		format: q(`SELECT max(format) FROM S.format`),
		// One statement: the row lock of the upsert orders concurrent
		// reservations (a concurrent insert of a missing key waits and
		// takes the update path), so no two get the same numbers.
		reserve: q(`INSERT INTO S.kv (k, v, ver) VALUES ($1, int8send($2::bigint + $3::bigint), nextval('S.version'))
			ON CONFLICT (k) DO UPDATE SET
				v = int8send(greatest(('x' || encode(S.kv.v, 'hex'))::bit(64)::bigint, $2::bigint) + $3::bigint),
				ver = excluded.ver
			RETURNING ('x' || encode(v, 'hex'))::bit(64)::bigint`),
	}
	st.lease = leaseStmt(q)
	// The change log (changes.go): locked commits take their versions in
	// order; a sequence never called has no version yet (0).
	st.changesLast = q(`SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM S.version`)
	// Version 0 is the sentinel row: its session column holds the log's
	// epoch (changes.go).
	st.changesSince = q(`SELECT ver, session, keys, ranges FROM S.changes WHERE ver > $1 OR ver = 0 ORDER BY ver`)
	st.changesSentinel = q(`INSERT INTO S.changes (ver, session, keys, ranges) VALUES (0, $1, '{}', '{}') ON CONFLICT DO NOTHING`)
	st.epochNow = q(`SELECT coalesce((SELECT session FROM S.changes WHERE ver = 0), 0)`) // 0: emptied by a crash
	// The crash guard (async.go): aborts unless the row of version 0
	// holds epoch $1.
	st.guard = q(`SELECT 1 / count(*)::int FROM S.changes WHERE ver = 0 AND session = $1`)
	// The store's marker row (replay.go): every commit without sync
	// counts itself in it, under its row lock, so the counts follow the
	// order of the commits in the WAL; Sync's flush touches it (a write,
	// or PostgreSQL would skip the flush; and rows untouched for a week
	// are left by processes that died, and reaped).
	st.markBump = q(`INSERT INTO S.marks AS m (owner, n) VALUES ($1, 1)
		ON CONFLICT (owner) DO UPDATE SET n = m.n + 1 RETURNING n`)
	st.markTouch = q(`INSERT INTO S.marks AS m (owner, n) VALUES ($1, 0)
		ON CONFLICT (owner) DO UPDATE SET at = now()`)
	st.markRead = q(`SELECT coalesce((SELECT n FROM S.marks WHERE owner = $1), 0)`)
	st.markSet = q(`INSERT INTO S.marks AS m (owner, n) VALUES ($1, $2)
		ON CONFLICT (owner) DO UPDATE SET n = greatest(m.n, excluded.n), at = now()`)
	st.markDel = q(`DELETE FROM S.marks WHERE owner = $1`)
	st.marksReap = q(`DELETE FROM S.marks WHERE at < now() - interval '7 days'`)
	st.changesAdd = q(`INSERT INTO S.changes (ver, session, keys, ranges) VALUES (currval('S.version'), $1, $2::bytea[], $3::bytea[])`)
	st.changesPrune = q(`DELETE FROM S.changes WHERE ver > 0 AND at < now() - make_interval(secs => $1)`)
	st.sessionExists = q(`SELECT EXISTS (SELECT 1 FROM S.sessions WHERE id = $1)`)
	st.txLock = q(`SELECT pg_advisory_xact_lock(hashtext('doppel tx ' || 'S'))`)
	// The payload is the committing session (0: none) and the version
	// the commit took; other hosts' listeners read it (docs/SHARED.md, 9.3).
	st.notify = q(`SELECT pg_notify('doppel_' || 'S', $1::bigint::text || ' ' || currval('S.version')::text)`)
	st.sessionsLock, st.sessionsReap, st.sessionsAdd, st.sessionLock,
		st.sessionsBeat, st.sessionsMount, st.sessionsDel, st.sessionsAll = sessionStmts(q)
	return st
}

// create makes the volume's schema if it is missing (in one round trip,
// under an advisory lock so that two hosts opening a new volume at once do
// not collide) and checks its format. Unless missingToo, a schema without
// the format table is ErrNoVolume and nothing is created; one that has it
// still gets the tables newer code added.
func (s *Store) create(ctx context.Context, missingToo bool) error {
	if !missingToo {
		var exists bool
		ctx, cancel := context.WithTimeout(ctx, s.timeout)
		err := s.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, s.schema+".format").Scan(&exists)
		cancel()
		if err != nil {
			return err
		}
		if !exists {
			return ErrNoVolume
		}
	}
	ddl := strings.NewReplacer("S.", s.schema+".", "'S'", "'"+s.schema+"'", "FMT", fmt.Sprint(FormatVersion)).Replace(`
		BEGIN;
		SELECT pg_advisory_xact_lock(hashtext('doppel schema S'));
		CREATE SCHEMA IF NOT EXISTS ` + s.schema + `;
		CREATE TABLE IF NOT EXISTS S.kv (k bytea PRIMARY KEY, v bytea NOT NULL, ver bigint NOT NULL);
		CREATE SEQUENCE IF NOT EXISTS S.version;
		CREATE TABLE IF NOT EXISTS S.format (format int NOT NULL);
		INSERT INTO S.format SELECT FMT WHERE NOT EXISTS (SELECT 1 FROM S.format);
		CREATE TABLE IF NOT EXISTS S.leases (name text PRIMARY KEY, session bigint NOT NULL, expires timestamptz NOT NULL);
		CREATE TABLE IF NOT EXISTS S.sessions (id bigserial PRIMARY KEY, host text NOT NULL, pid int NOT NULL,
			mount text NOT NULL, started timestamptz NOT NULL DEFAULT now(), heartbeat timestamptz NOT NULL DEFAULT now());
		ALTER TABLE S.sessions ADD COLUMN IF NOT EXISTS alone boolean NOT NULL DEFAULT true;
		CREATE TABLE IF NOT EXISTS S.marks (owner bigint PRIMARY KEY, n bigint NOT NULL, at timestamptz NOT NULL DEFAULT now());
		CREATE UNLOGGED TABLE IF NOT EXISTS S.changes (ver bigint PRIMARY KEY, session bigint NOT NULL,
			at timestamptz NOT NULL DEFAULT now(), keys bytea[] NOT NULL, ranges bytea[] NOT NULL);
		COMMIT;`)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if _, err := s.pool.Exec(ctx, ddl); err != nil { // no arguments: one simple query
		return err
	}
	var f int
	if err := s.pool.QueryRow(ctx, s.q.format).Scan(&f); err != nil {
		return err
	}
	if f > FormatVersion {
		return fmt.Errorf("the volume's metadata has format %d; this doppel reads format %d or older: upgrade doppel", f, FormatVersion)
	}
	return nil
}
