package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options say where a volume's metadata lives.
type Options struct {
	// URL is a libpq connection string (URL or key=value). A password may
	// be in it, in PGPASSWORD, or in ~/.pgpass (PGPASSFILE); pgx reads all
	// three, and the other PG* variables too.
	URL string
	// Schema is the volume's schema.
	Schema string
	// Create makes the schema when it is missing. Without it, opening a
	// schema that holds no volume fails with ErrNoVolume and creates
	// nothing, so a mistyped name or a dropped volume leaves no trace.
	Create bool
	// Timeout bounds each statement's round trip (default 30 s).
	Timeout time.Duration
	// FlushEvery flushes, that often, the commits this store made without
	// sync since the last flush (async.go, flushBehind); 0: only Sync does.
	FlushEvery time.Duration
	// CacheBytes bounds the cache of records read and written
	// (recordCache): 0 is DefaultCacheBytes, negative turns it off. It is
	// exact only while this Store is the schema's only writer.
	CacheBytes int64
}

// DefaultCacheBytes bounds the record cache unless Options say otherwise.
const DefaultCacheBytes = 64 << 20

// DefaultMaxConns is the pool size unless the URL sets pool_max_conns:
// each open snapshot holds a connection.
const DefaultMaxConns = 16

// ErrNoVolume: the schema named holds no doppel volume.
var ErrNoVolume = errors.New("holds no doppel volume")

// Open connects to the database and opens the volume's schema (creating
// it if o.Create says so).
func Open(ctx context.Context, o Options) (*Store, error) {
	if err := checkSchemaName(o.Schema); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(o.URL)
	if err != nil {
		return nil, fmt.Errorf("metadata URL %s: %s", Redact(o.URL), scrub(err, o.URL))
	}
	if !strings.Contains(o.URL, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "doppel"
	s := &Store{q: newStmts(o.Schema), schema: o.Schema}
	// Every new connection checks, before the pool hands it out, that the
	// server did not go through crash recovery unnoticed (replay.go).
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		if err := indexOnly(ctx, c); err != nil {
			return err
		}
		return s.checkNewConn(ctx, c)
	}
	countWrites(cfg, &s.trips)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("metadata store %s: %s", Redact(o.URL), scrub(err, o.URL))
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	s.pool, s.timeout, s.connCfg = pool, o.Timeout, cfg.ConnConfig.Copy()
	s.r = reader{q: pool, st: s.q, timeout: o.Timeout, lost: pool.Reset}
	switch {
	case o.CacheBytes == 0:
		s.cache = newRecordCache(DefaultCacheBytes)
	case o.CacheBytes > 0:
		s.cache = newRecordCache(o.CacheBytes)
	}
	if err := s.create(ctx, o.Create); err != nil {
		pool.Close()
		if errors.Is(err, ErrNoVolume) {
			return nil, fmt.Errorf("schema %s of %s %w", o.Schema, Redact(o.URL), ErrNoVolume)
		}
		return nil, fmt.Errorf("metadata store %s, schema %s: %s", Redact(o.URL), o.Schema, scrub(err, o.URL))
	}
	if err := s.takeEpoch(); err != nil {
		pool.Close()
		return nil, fmt.Errorf("metadata store %s, schema %s: %s", Redact(o.URL), o.Schema, scrub(err, o.URL))
	}
	s.guard.owner = newEpoch()
	pool.Exec(ctx, s.q.marksReap) // rows of processes that died; best effort
	if o.FlushEvery > 0 {
		s.flushStop, s.flushDone = make(chan struct{}), make(chan struct{})
		go s.flushBehind(o.FlushEvery)
	}
	return s, nil
}

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// checkSchemaName admits lower-case identifiers only, which need no
// quoting anywhere (also inside the regclass literals of statements).
func checkSchemaName(name string) error {
	if !schemaName.MatchString(name) {
		return fmt.Errorf("schema name %q: want 1-63 of a-z, 0-9 and _, not starting with a digit", name)
	}
	if strings.HasPrefix(name, "pg_") {
		return errors.New("schema names beginning with pg_ are reserved by PostgreSQL")
	}
	return nil
}

var kvPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// Redact returns the connection string with its password replaced, for
// messages and logs. What the URL or key=value form does not redact (a
// query pair or a user part that does not parse, which Go's URL parser
// leaves as it was or refuses) goes by every password found in conn.
func Redact(conn string) string { return maskPasswords(redactForm(conn), conn) }

// redactForm replaces the password where the connection string's form
// puts it: the URL's user part and password parameter, or a key=value
// string's password.
func redactForm(conn string) string {
	if u, err := url.Parse(conn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	return kvPassword.ReplaceAllString(conn, "${1}xxxxx")
}

// scrub is err's message with any password of conn taken out (pgx's
// messages quote parts of the connection string).
func scrub(err error, conn string) string { return maskPasswords(err.Error(), conn) }

// maskPasswords is s with every password found in conn replaced.
func maskPasswords(s, conn string) string {
	for _, pw := range passwords(conn) {
		if pw != "" {
			s = strings.ReplaceAll(s, pw, "xxxxx")
		}
	}
	return s
}

func passwords(conn string) []string {
	var out []string
	if pw, ok := rawUserPassword(conn); ok {
		out = append(out, pw)
	}
	if u, err := url.Parse(conn); err == nil {
		if pw, ok := u.User.Password(); ok {
			out = append(out, pw, url.QueryEscape(pw), url.PathEscape(pw))
		}
		if pw := u.Query().Get("password"); pw != "" {
			out = append(out, pw)
		}
	}
	for _, m := range kvPassword.FindAllStringSubmatch(conn, -1) {
		out = append(out, strings.Trim(m[2], "'"))
	}
	return out
}

// rawUserPassword is the password of a URL's user part as written
// (escapes and all), found without parsing the URL, which may not parse.
func rawUserPassword(conn string) (string, bool) {
	_, rest, ok := strings.Cut(conn, "://")
	if !ok {
		return "", false
	}
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		rest = rest[:end]
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return "", false
	}
	_, pw, ok := strings.Cut(rest[:at], ":")
	return pw, ok
}

// ListVolumes lists the schemas of the database conn names that hold a
// volume's tables, in order.
func ListVolumes(ctx context.Context, conn string) ([]string, error) {
	c, err := pgx.Connect(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("metadata store %s: %s", Redact(conn), scrub(err, conn))
	}
	defer c.Close(context.Background())
	rows, err := c.Query(ctx, `SELECT t.table_schema FROM information_schema.tables t
		WHERE t.table_name = 'kv' AND EXISTS (SELECT 1 FROM information_schema.tables f
			WHERE f.table_schema = t.table_schema AND f.table_name = 'format')
		ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// indexOnly turns off sequential scans for the connection's session. Every
// statement on a volume's tables looks keys up or scans a key range, so its
// index is always the right plan. But while a young table's statistics say
// a few hundred rows, the planner prices a probe per key of a GetMany above
// reading the whole table, and a prepared statement keeps that generic plan
// as the table grows (nothing re-plans it before the next ANALYZE): a fresh
// volume's chunk lookups were scanning tens of thousands of rows each,
// 15 ms apiece, 59 s of the server's CPU for 4 GiB written. Set here rather
// than as a startup parameter, which connection poolers refuse.
//
// It also keeps prepared statements on their generic plan: with custom
// plans the server planned every range scan and GetMany again at each
// bind (BENCHMARKS.md, issue 14), and with sequential scans off the
// generic plan is the index's anyway.
func indexOnly(ctx context.Context, c *pgx.Conn) error {
	_, err := c.Exec(ctx, "SET enable_seqscan = off; SET plan_cache_mode = force_generic_plan")
	return err
}
