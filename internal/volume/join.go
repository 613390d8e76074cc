package volume

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/schema"
)

// JoinOptions say where an existing shared volume lives.
type JoinOptions struct {
	// Meta is the PostgreSQL URL of the volume's database; ?schema=NAME
	// names the volume, and may be left out when the database holds one.
	Meta string
	// Data is the volume's S3 URL; empty takes the one its creator gave
	// (recorded in the metadata), which a given one must match.
	Data string
	// CacheBytes bounds this store directory's read cache of S3 data.
	CacheBytes int64
}

// ErrDataOnOneHost is returned by Join for a volume whose chunk data is
// in the segment files of the store directory that created it.
var ErrDataOnOneHost = errors.New("its chunk data is in the store directory of the host that created it (made without --data): only that store directory can open it")

// Join makes dir (new or empty) a store directory of the existing shared
// volume opt names: it writes shared.json and the format file for that
// volume, creates nothing in PostgreSQL or S3, and marks the volume for
// several hosts (schema.KeyHosts). It returns the volume's schema and
// UUID. Several store directories of one volume are how several hosts
// use it (docs/SHARED.md, section 9).
func Join(dir string, opt JoinOptions) (schemaName, uuid string, err error) {
	if err := checkDataURL(opt.Data); err != nil {
		return "", "", err
	}
	mu, err := parseMetaURL(opt.Meta)
	if err != nil {
		return "", "", err
	}
	if mu.schema == "" {
		if mu.schema, err = onlyVolume(mu); err != nil {
			return "", "", err
		}
	}
	lock, err := createStoreDir(dir)
	if err != nil {
		return "", "", err
	}
	defer lock.Close()
	m, err := openPG(mu.conn, mu.schema, false)
	if err != nil {
		return "", "", err
	}
	defer m.Close()
	raw, err := m.Get(schema.KeyConfig)
	if errors.Is(err, meta.ErrNotFound) {
		return "", "", fmt.Errorf("schema %s of %s holds no doppel volume", mu.schema, pgstore.Redact(mu.stored))
	} else if err != nil {
		return "", "", err
	}
	cfg, err := schema.DecodeConfig(raw)
	if err != nil {
		return "", "", fmt.Errorf("schema %s: %w", mu.schema, err)
	}
	data, err := joinDataURL(m, opt.Data)
	if err != nil {
		return "", "", err
	}
	info := sharedInfo{Meta: mu.stored, Schema: mu.schema, Data: data, CacheBytes: opt.CacheBytes}
	// Open the data store once, so that a wrong endpoint or refused
	// credentials fail here rather than at mount.
	b, err := openSharedData(dir, info, m)
	if err != nil {
		return "", "", err
	}
	if err := b.Close(); err != nil {
		return "", "", err
	}
	// From now on every host runs the volume for several; one that has
	// it mounted for one host keeps others out until it mounts again.
	if err := setManyHosts(m); err != nil {
		return "", "", fmt.Errorf("marking the volume for several hosts: %w", err)
	}
	if err := writeShared(dir, info); err != nil {
		return "", "", err
	}
	return mu.schema, cfg.UUID, writeFormat(dir, formatInfo{Format: formatShared, UUID: cfg.UUID, Kind: KindShared})
}

// joinDataURL is the data URL of the volume in m: the one recorded at
// init, which given (if not empty) must match, or given for a volume
// that predates the record.
func joinDataURL(m meta.Store, given string) (string, error) {
	v, err := m.Get(schema.KeyDataURL)
	switch {
	case errors.Is(err, meta.ErrNotFound):
		if given == "" {
			return "", errors.New("the volume does not record where its chunk data is (it predates doppel join): give --data")
		}
		return given, nil
	case err != nil:
		return "", err
	case len(v) == 0:
		return "", fmt.Errorf("cannot join the volume: %w", ErrDataOnOneHost)
	case given != "" && given != string(v):
		return "", fmt.Errorf("--data %s is not the volume's data store %s", given, v)
	}
	return string(v), nil
}

// setDataURL records a new shared volume's data URL (KeyDataURL).
func setDataURL(m meta.Store, data string) error {
	b := m.NewBatch()
	defer b.Close()
	if err := b.Set(schema.KeyDataURL, []byte(data)); err != nil {
		return err
	}
	return b.Commit(true)
}

// onlyVolume is the schema of the only doppel volume in the database mu
// names; an error lists them when there are several.
func onlyVolume(mu metaURL) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	names, err := pgstore.ListVolumes(ctx, mu.conn)
	if err != nil {
		return "", err
	}
	switch len(names) {
	case 0:
		return "", fmt.Errorf("%s holds no doppel volume", pgstore.Redact(mu.stored))
	case 1:
		return names[0], nil
	}
	return "", fmt.Errorf("%s holds %d doppel volumes (%s): name one with ?schema=NAME", pgstore.Redact(mu.stored), len(names), strings.Join(names, ", "))
}
