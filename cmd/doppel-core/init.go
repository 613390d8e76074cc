package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/doppelfs/doppel/internal/volume"
)

func runInit(args []string) error {
	fs := newFlags("init", "[--store DIR] [--chunking POLICY] [--compression MODE] [--meta URL | --meta-file FILE [--data S3URL [--cache-size SIZE]]]",
		"Create a new, empty volume. The store directory must not exist or be empty.\n"+
			"With --meta the volume is shared: its metadata lives in PostgreSQL (one schema per volume),\n"+
			"its chunk data in the store directory, or with --data in S3-compatible object storage;\n"+
			"the store directory keeps the connection settings (shared.json, without the password:\n"+
			"give it at mount time with PGPASSWORD or ~/.pgpass; S3 credentials always come from\n"+
			"AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws/credentials) and the S3 read cache.")
	store := storeFlag(fs)
	logFlag(fs, "warn")
	chunking := fs.String("chunking", "cdc", "chunking policy: cdc (16K/64K/256K content-defined), cdc:MIN:AVG:MAX, or fixed:SIZE (e.g. fixed:4K for VM images)")
	comp := fs.String("compression", "off", "chunk compression: off, zstd (keep any saving) or auto (keep savings of 1/8 or more)")
	metaURL := fs.String("meta", "", "shared volume: PostgreSQL URL postgres://USER[:PASSWORD]@HOST:PORT/DB?sslmode=...[&schema=NAME] (a password here is visible in ps: prefer --meta-file, PGPASSWORD or ~/.pgpass)")
	metaFile := fs.String("meta-file", "", "shared volume: read the PostgreSQL URL from FILE (- for standard input)")
	data := fs.String("data", "", "shared volume: chunk data in S3, s3://BUCKET/PREFIX?endpoint=http://HOST:PORT&region=REGION (needs --meta; without it the data stays in the store directory)")
	cacheSize := fs.String("cache-size", "1G", "with --data: bound of the local read cache of S3 data in the store directory (e.g. 512M, 4G; 0 disables it; a long sequential read is cached up to a quarter of it)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *data != "" && *metaURL == "" && *metaFile == "" {
		return usagef("%v", volume.ErrDataNeedsMeta)
	}
	cacheBytes, err := cacheBytesOf(*cacheSize)
	if err != nil {
		return err
	}
	if *metaURL, err = metaURLOf("init", *metaURL, *metaFile); err != nil {
		return err
	}
	dir, err := storeDir(*store)
	if err != nil {
		return err
	}
	opt := volume.InitOptions{Chunking: *chunking, Compression: *comp, Meta: *metaURL, Data: *data, CacheBytes: cacheBytes}
	if err := volume.Init(dir, opt); err != nil {
		return err
	}
	if *metaURL != "" {
		where := "in the store directory"
		if *data != "" {
			where = "in S3"
		}
		fmt.Printf("created shared volume in %s (metadata in PostgreSQL, chunk data %s; chunking %s, compression %s)\n", dir, where, *chunking, *comp)
		return nil
	}
	fmt.Printf("created volume in %s (chunking %s, compression %s)\n", dir, *chunking, *comp)
	return nil
}

// readMetaFile reads the metadata URL from the first non-empty line of
// path, or of standard input for "-".
func readMetaFile(path string) (string, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("--meta-file: %w", err)
		}
		defer f.Close()
		r = f
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			return line, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("--meta-file: %w", err)
	}
	return "", errors.New("--meta-file: no URL in it")
}
