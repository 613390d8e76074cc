package main

import (
	"fmt"

	"github.com/doppelfs/doppel/internal/volume"
)

func runJoin(args []string) error {
	fs := newFlags("join", "[--store DIR] (--meta URL | --meta-file FILE) [--data S3URL] [--cache-size SIZE]",
		"Make a store directory for an existing shared volume, so that this host can open it:\n"+
			"the volume's metadata is in the PostgreSQL database --meta names (?schema=NAME picks\n"+
			"the volume when the database holds several), its chunk data in S3 (where its creator\n"+
			"put it, unless --data says so; it must match). Nothing is created in S3.\n"+
			"The store directory must not exist or be empty; it keeps the connection settings\n"+
			"(without the password) and this host's read cache, as 'doppel init' does.\n"+
			"A volume whose chunk data is in the store directory that created it cannot be joined.\n"+
			"Joining marks the volume for several hosts: from then on every host's 'doppel mount'\n"+
			"runs it for several at once (docs/SHARED.md, section 9). A daemon that mounted it\n"+
			"before the join runs it for one host and keeps the others out: unmount it and mount\n"+
			"it again.")
	store := storeFlag(fs)
	logFlag(fs, "warn")
	metaURL := fs.String("meta", "", "PostgreSQL URL postgres://USER[:PASSWORD]@HOST:PORT/DB?sslmode=...[&schema=NAME] (a password here is visible in ps: prefer --meta-file, PGPASSWORD or ~/.pgpass)")
	metaFile := fs.String("meta-file", "", "read the PostgreSQL URL from FILE (- for standard input)")
	data := fs.String("data", "", "the volume's S3 URL, s3://BUCKET/PREFIX?endpoint=http://HOST:PORT&region=REGION (default: the one the volume records)")
	cacheSize := fs.String("cache-size", "1G", "bound of this host's read cache of S3 data in the store directory (e.g. 512M, 4G; 0 disables it; a long sequential read is cached up to a quarter of it)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *metaURL == "" && *metaFile == "" {
		return usagef("give --meta or --meta-file: where the volume's metadata is")
	}
	cacheBytes, err := cacheBytesOf(*cacheSize)
	if err != nil {
		return err
	}
	if *metaURL, err = metaURLOf("join", *metaURL, *metaFile); err != nil {
		return err
	}
	dir, err := storeDir(*store)
	if err != nil {
		return err
	}
	schemaName, uuid, err := volume.Join(dir, volume.JoinOptions{Meta: *metaURL, Data: *data, CacheBytes: cacheBytes})
	if err != nil {
		return err
	}
	fmt.Printf("joined shared volume %s (schema %s) in %s; several hosts can now mount it at once\n", uuid, schemaName, dir)
	return nil
}
