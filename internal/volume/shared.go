package volume

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/schema"
)

// SharedFile is the file of a shared volume's store directory that says
// where its metadata (and later its chunk data) lives. It holds no
// password and must be readable by its owner only (mode 0600).
const SharedFile = "shared.json"

// sharedInfo is SharedFile's content.
type sharedInfo struct {
	// Meta is the PostgreSQL URL without its password: that comes from
	// PGPASSWORD or ~/.pgpass (PGPASSFILE) when the volume is opened.
	Meta string `json:"meta"`
	// Schema is the volume's schema in that database.
	Schema string `json:"schema"`
	// Data is where chunk data lives: empty means the segment files in
	// the store directory's chunks/, else s3://BUCKET/PREFIX?endpoint=...
	// (no credentials: they come from AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY or the credentials file when the volume is
	// opened).
	Data string `json:"data"`
	// CacheBytes bounds the local read cache of S3 data in S3Dir/cache:
	// 0 is DefaultCacheBytes, negative disables the cache.
	CacheBytes int64 `json:"cache_bytes,omitempty"`
	// multiHost is what multiHost said when the volume was opened.
	multiHost bool
}

// metaURL is a --meta URL taken apart: conn connects (with the password
// if the URL had one), stored is what shared.json keeps (no password),
// schema the schema asked for with ?schema= (empty: the default).
type metaURL struct {
	conn, stored, schema string
	password             bool
}

func parseMetaURL(raw string) (metaURL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return metaURL{}, fmt.Errorf("metadata URL %s: want postgres://USER@HOST:PORT/DB?sslmode=...", pgstore.Redact(raw))
	}
	q := u.Query()
	m := metaURL{schema: q.Get("schema")}
	q.Del("schema") // ours, not a server setting
	u.RawQuery = q.Encode()
	m.conn = u.String()
	_, inUser := u.User.Password()
	m.password = inUser || q.Has("password")
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	q.Del("password")
	u.RawQuery = q.Encode()
	m.stored = u.String()
	return m, nil
}

// HasPassword reports whether a metadata URL carries a password (the
// command warns: it is visible in ps while the command runs).
func HasPassword(raw string) bool {
	m, err := parseMetaURL(raw)
	return err == nil && m.password
}

// defaultSchema is a volume's schema unless --meta names one.
func defaultSchema(uuid string) string {
	return "doppel_" + strings.ReplaceAll(uuid, "-", "")
}

// pgFlushEvery: how soon a commit without sync is known durable, and so
// how soon after its writes a crash of PostgreSQL no longer stops the
// mount (pgstore.Options.FlushEvery).
const pgFlushEvery = time.Second

// openTimeout bounds connecting to the metadata store.
const openTimeout = time.Minute

// openPG opens the volume's schema, with a hint when the password is
// what is missing.
func openPG(conn, schemaName string, create bool) (*pgstore.Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	m, err := pgstore.Open(ctx, pgstore.Options{URL: conn, Schema: schemaName, Create: create, FlushEvery: pgFlushEvery})
	if err != nil {
		msg := strings.ToLower(err.Error())
		if (strings.Contains(msg, "password") || strings.Contains(msg, "authentication")) && !HasPassword(conn) && os.Getenv("PGPASSWORD") == "" {
			return nil, fmt.Errorf("%w; the password is not kept in the store directory: set PGPASSWORD or put it in ~/.pgpass (or the file PGPASSFILE names)", err)
		}
		return nil, err
	}
	return m, nil
}

// initShared creates a shared volume in dir: its metadata in the
// PostgreSQL schema opt.Meta names (or doppel_<uuid>), chunk data in dir's
// segment files, and the format file written last.
func initShared(dir string, opt InitOptions, cfg schema.Config) error {
	if err := checkDataURL(opt.Data); err != nil {
		return err
	}
	mu, err := parseMetaURL(opt.Meta)
	if err != nil {
		return err
	}
	if mu.schema == "" {
		mu.schema = defaultSchema(cfg.UUID)
	}
	lock, err := createStoreDir(dir)
	if err != nil {
		return err
	}
	defer lock.Close()
	m, err := openPG(mu.conn, mu.schema, true)
	if err != nil {
		return err
	}
	defer m.Close()
	if _, err := m.Get(schema.KeyConfig); err == nil {
		return fmt.Errorf("schema %s of %s already holds a doppel volume; refusing to overwrite it", mu.schema, pgstore.Redact(mu.stored))
	} else if !errors.Is(err, meta.ErrNotFound) {
		return err
	}
	if opt.Data != "" {
		// Chunks lie back to back in S3 packs: the padding to 4 KiB that
		// segment files need for punching only costs bytes in objects
		// (docs/SHARED.md, "Packs without padding").
		cfg.Format, cfg.PackAlign = max(cfg.Format, schema.FormatUnpaddedPacks), 1
	}
	info := sharedInfo{Meta: mu.stored, Schema: mu.schema, Data: opt.Data, CacheBytes: opt.CacheBytes}
	if err := initSharedData(dir, info, m); err != nil {
		return err
	}
	if err := initMeta(m, cfg); err != nil {
		return err
	}
	if err := setDataURL(m, opt.Data); err != nil {
		return err
	}
	if opt.Data == "" {
		if err := os.MkdirAll(filepath.Join(dir, "chunks"), 0o700); err != nil {
			return err
		}
	}
	if err := writeShared(dir, info); err != nil {
		return err
	}
	return writeFormat(dir, formatInfo{Format: formatShared, UUID: cfg.UUID, Kind: KindShared})
}

func writeShared(dir string, s sharedInfo) error {
	b, _ := json.MarshalIndent(s, "", "  ")
	tmp := filepath.Join(dir, SharedFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, SharedFile))
}

// readShared reads dir's shared.json, refusing one that group or others
// may read.
func readShared(dir string) (sharedInfo, error) {
	var s sharedInfo
	path := filepath.Join(dir, SharedFile)
	st, err := os.Stat(path)
	if err != nil {
		return s, fmt.Errorf("shared volume: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return s, fmt.Errorf("%s is readable by group or others (mode %04o); it says where the volume's metadata is and who may connect: chmod 600 %s", path, st.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %v", path, err)
	}
	if s.Meta == "" || s.Schema == "" {
		return s, fmt.Errorf("%s: no metadata URL or schema", path)
	}
	if err := checkDataURL(s.Data); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// openSharedMeta opens the metadata store of the shared volume in dir,
// whose format file says uuid, checks that its schema holds that volume
// (a dropped schema is not made again: it would look like an empty
// volume) and registers this process's session, doing
// what purpose says (docs/SHARED.md, 9.1).
func openSharedMeta(dir, uuid, purpose string) (*pgstore.Store, sharedInfo, error) {
	s, err := readShared(dir)
	if err != nil {
		return nil, s, err
	}
	m, err := openPG(s.Meta, s.Schema, false)
	if errors.Is(err, pgstore.ErrNoVolume) {
		return nil, s, fmt.Errorf("%w (was it dropped?)", err)
	} else if err != nil {
		return nil, s, err
	}
	raw, err := m.Get(schema.KeyConfig)
	if errors.Is(err, meta.ErrNotFound) {
		m.Close()
		return nil, s, fmt.Errorf("schema %s of %s holds no doppel volume (was it dropped?)", s.Schema, pgstore.Redact(s.Meta))
	} else if err != nil {
		m.Close()
		return nil, s, err
	}
	if cfg, err := schema.DecodeConfig(raw); err == nil && cfg.UUID != uuid {
		m.Close()
		return nil, s, fmt.Errorf("schema %s of %s holds volume %s, not this store's %s", s.Schema, pgstore.Redact(s.Meta), cfg.UUID, uuid)
	}
	if s.multiHost, err = multiHost(m); err != nil {
		m.Close()
		return nil, s, err
	}
	// An offline check or repair must see the volume still: no other
	// host may have it open meanwhile.
	alone := !s.multiHost || purpose == "fsck"
	if err := registerSession(m, purpose, alone); err != nil {
		m.Close()
		return nil, s, err
	}
	// With several hosts, every commit records what it wrote, from this
	// process's first on (docs/SHARED.md, 9.2: the change log).
	if s.multiHost {
		if err := m.TrackChanges(); err != nil {
			m.Close()
			return nil, s, fmt.Errorf("%s: the change log: %w", pgstore.Redact(s.Meta), err)
		}
	}
	return m, s, nil
}

// multiHost reports whether this process runs the code for several hosts
// on the shared volume whose metadata m holds (docs/SHARED.md, 9): when
// the volume was joined (schema.KeyHosts, which `doppel join` sets), or
// when DOPPEL_MULTIHOST says so (1: yes, 0: no; for tests and for
// volumes joined before the record existed).
func multiHost(m meta.Reader) (bool, error) {
	switch os.Getenv("DOPPEL_MULTIHOST") {
	case "1":
		return true, nil
	case "0":
		return false, nil
	}
	_, err := m.Get(schema.KeyHosts)
	if errors.Is(err, meta.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// setManyHosts records that several hosts may mount the volume
// (schema.KeyHosts).
func setManyHosts(m meta.Store) error {
	b := m.NewBatch()
	defer b.Close()
	if err := b.Set(schema.KeyHosts, []byte("many")); err != nil {
		return err
	}
	return b.Commit(true)
}

// multiHostGrace is how old a pack must be before a sweep or a crash
// recovery may take it for an orphan when several hosts may write: longer
// than any host takes from uploading a pack to committing the metadata
// that names it.
const multiHostGrace = 10 * time.Minute

// registerSession registers this process's session on m. A session
// alone (a volume one host mounts, an offline check) must be the only
// live one, and no other registers while it lives: two processes running
// the code for one host on one volume would corrupt it.
func registerSession(m *pgstore.Store, purpose string, alone bool) error {
	host, _ := os.Hostname()
	_, err := m.Register(pgstore.SessionInfo{Host: host, PID: os.Getpid(), Mount: purpose, Alone: alone})
	switch {
	case errors.Is(err, pgstore.ErrOtherSessions) && purpose == "fsck":
		return fmt.Errorf("%w: %w; an offline check needs the volume unmounted on every host (doppel fsck MOUNTPOINT checks a mounted one)", ErrInUse, err)
	case errors.Is(err, pgstore.ErrOtherSessions) && alone:
		return fmt.Errorf("%w: %w; to mount the volume on several hosts, make each host's store directory with doppel join (that marks the volume for several hosts)", ErrInUse, err)
	case errors.Is(err, pgstore.ErrOtherSessions):
		return fmt.Errorf("%w: %w; that process runs the volume for one host only: unmount it there and mount it again (it then shares the volume), then mount here", ErrInUse, err)
	}
	return err
}

// sessionsOf is namespace.Sessions of a shared volume several hosts
// mount: this process's session, and the live ones as listed at most
// a second ago.
type sessionsOf struct {
	m *pgstore.Store

	mu     sync.Mutex
	alive  map[uint64]bool
	listed time.Time
}

func (s *sessionsOf) Own() uint64 { return uint64(s.m.SessionID()) }

// Alive reports whether session id is alive; when the sessions cannot be
// listed, every session counts as alive (what it holds then stays). A
// session listed alive within the last second counts as alive; one not
// listed alive is looked up again, so that a session that registered
// after the last listing (and whose records the caller just read) is
// never taken for dead.
func (s *sessionsOf) Alive(id uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.listed) > time.Second || !s.alive[id] {
		all, err := s.m.Sessions()
		if err != nil {
			return true
		}
		s.alive = map[uint64]bool{}
		for _, se := range all {
			if se.Alive() {
				s.alive[uint64(se.ID)] = true
			}
		}
		s.listed = time.Now()
	}
	return s.alive[id]
}
