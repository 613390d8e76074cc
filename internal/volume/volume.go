package volume

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/chunker"
	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/headroom"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/schema"
)

// InitOptions are fixed when a volume is created.
type InitOptions struct {
	Chunking    string // chunker policy; empty means the default
	Compression string // off, zstd, auto; empty means off
}

// Init creates a volume in dir, which must not exist or be empty.
func Init(dir string, opt InitOptions) error {
	pol := chunker.DefaultPolicy()
	if opt.Chunking != "" {
		var err error
		if pol, err = chunker.ParsePolicy(opt.Chunking); err != nil {
			return err
		}
	}
	if opt.Compression == "" {
		opt.Compression = "off"
	}
	if !validCompression(opt.Compression) {
		return fmt.Errorf("unknown compression %q (want off, zstd or auto)", opt.Compression)
	}
	if err := checkEmptyDir(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create store: %w", err)
	}
	lock, err := lockFile(dir)
	if err != nil {
		return err
	}
	defer lock.Close()
	m, err := meta.OpenPebble(filepath.Join(dir, "meta"))
	if err != nil {
		return err
	}
	defer m.Close()
	cfg := schema.Config{Format: schema.FormatVersion, UUID: newUUID(), Chunking: pol.String(), Compression: opt.Compression, Created: time.Now().UnixNano()}
	if err := initMeta(m, cfg); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "chunks"), 0o700); err != nil {
		return err
	}
	return writeFormat(dir, formatInfo{Format: FormatVersion, UUID: cfg.UUID})
}

func initMeta(m meta.Store, cfg schema.Config) error {
	eng, err := content.New(m, nopBlobs{}, content.Config{Chunking: chunker.DefaultPolicy()}, slog.Default())
	if err != nil {
		return err
	}
	defer eng.Close()
	tx, err := eng.Begin()
	if err != nil {
		return err
	}
	if err := tx.Batch().Set(schema.KeyConfig, schema.EncodeConfig(cfg)); err != nil {
		tx.Abort()
		return err
	}
	if err := namespace.InitRoot(tx, uint32(os.Getuid()), uint32(os.Getgid())); err != nil {
		tx.Abort()
		return err
	}
	return tx.Commit(true)
}

func validCompression(s string) bool {
	for _, m := range content.CompressionModes {
		if s == m {
			return true
		}
	}
	return false
}

func checkEmptyDir(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("store %s exists and is not a directory", dir)
	}
	if _, err := os.Lstat(filepath.Join(dir, FormatFile)); err == nil {
		return fmt.Errorf("store %s already holds a doppel volume; refusing to overwrite it", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("store %s: %w", dir, err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("store %s is not empty; give an empty or new directory", dir)
	}
	return nil
}

// Volume is an open volume: stores, content engine and namespace.
type Volume struct {
	Dir    string
	Config schema.Config
	Meta   meta.Store
	Blobs  *blob.Dir
	Engine *content.Engine
	NS     *namespace.Volume
	lock   *os.File
	closed bool
}

// Open opens the volume in dir for exclusive use by this process.
func Open(dir string, log *slog.Logger) (*Volume, error) {
	return OpenWith(dir, log, namespace.Options{})
}

// OpenWith is Open with namespace tuning (tests use small thresholds).
func OpenWith(dir string, log *slog.Logger, nsOpt namespace.Options) (*Volume, error) {
	if _, err := readFormat(dir); err != nil {
		return nil, err
	}
	lock, err := lockFile(dir)
	if err != nil {
		return nil, err
	}
	v := &Volume{Dir: dir, lock: lock}
	if err := v.open(log, nsOpt); err != nil {
		v.Close()
		return nil, err
	}
	return v, nil
}

func (v *Volume) open(log *slog.Logger, nsOpt namespace.Options) error {
	m, err := meta.OpenPebble(filepath.Join(v.Dir, "meta"))
	if err != nil {
		return err
	}
	v.Meta = m
	raw, err := m.Get(schema.KeyConfig)
	if err != nil {
		return fmt.Errorf("%s: volume configuration: %w", v.Dir, err)
	}
	if v.Config, err = schema.DecodeConfig(raw); err != nil {
		return fmt.Errorf("%s: %w", v.Dir, err)
	}
	pol, err := chunker.ParsePolicy(v.Config.Chunking)
	if err != nil {
		return fmt.Errorf("%s: chunking policy: %w", v.Dir, err)
	}
	if v.Blobs, err = blob.OpenDir(filepath.Join(v.Dir, "chunks"), blob.Options{}); err != nil {
		return err
	}
	room := nsOpt.Headroom
	if room == nil {
		room = headroom.New(v.Dir, m.DiskUsage)
	}
	cfg := content.Config{Chunking: pol, Compression: v.Config.Compression, VerifyReads: true, Headroom: room}
	if v.Engine, err = content.New(m, v.Blobs, cfg, log); err != nil {
		return err
	}
	nsOpt.StoreDir, nsOpt.Headroom = v.Dir, room
	v.NS, err = namespace.Open(m, v.Engine, nsOpt, log)
	return err
}

// Close flushes everything and releases the volume.
func (v *Volume) Close() error {
	if v.closed {
		return nil
	}
	v.closed = true
	var errs []error
	if v.NS != nil {
		errs = append(errs, v.NS.Close())
	}
	if v.Engine != nil {
		errs = append(errs, v.Engine.Close())
	}
	if v.Blobs != nil {
		errs = append(errs, v.Blobs.Close())
	}
	if v.Meta != nil {
		errs = append(errs, v.Meta.Sync(), v.Meta.Close())
	}
	if v.lock != nil {
		errs = append(errs, v.lock.Close())
	}
	return errors.Join(errs...)
}
