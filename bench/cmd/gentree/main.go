// Command gentree writes a synthetic source tree for the clone benchmark
// (bench/clone.sh): N small files of distinct printable content, PER files
// to a directory, laid out as DIR/dNNNN/fNNNNN. The same flags always give
// the same tree, so every target of a run gets identical bytes.
//
//	gentree -dir DIR -files 100000 [-per-dir 1000] [-min 200] [-max 800] [-seed 1]
//
// It prints one JSON object (files, dirs, bytes) on stdout.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
)

type spec struct {
	dir            string
	files, perDir  int
	minSize, maxSz int
	seed           uint64
}

type summary struct {
	Files int   `json:"files"`
	Dirs  int   `json:"dirs"`
	Bytes int64 `json:"bytes"`
}

func main() {
	var s spec
	flag.StringVar(&s.dir, "dir", "", "directory to fill (created; must not exist)")
	flag.IntVar(&s.files, "files", 1000, "number of files")
	flag.IntVar(&s.perDir, "per-dir", 1000, "files per directory")
	flag.IntVar(&s.minSize, "min", 200, "smallest file size in bytes")
	flag.IntVar(&s.maxSz, "max", 800, "largest file size in bytes")
	flag.Uint64Var(&s.seed, "seed", 1, "content seed")
	flag.Parse()
	if s.dir == "" || flag.NArg() != 0 || s.files < 1 || s.perDir < 1 || s.minSize < 0 || s.maxSz < s.minSize {
		fmt.Fprintln(os.Stderr, "usage: gentree -dir DIR [-files N] [-per-dir N] [-min BYTES] [-max BYTES] [-seed N]")
		os.Exit(2)
	}
	sum, err := generate(s)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gentree:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(sum); err != nil {
		os.Exit(1)
	}
}

// generate writes the tree described by s.
func generate(s spec) (summary, error) {
	if _, err := os.Lstat(s.dir); err == nil {
		return summary{}, fmt.Errorf("%s already exists", s.dir)
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return summary{}, err
	}
	var sum summary
	buf := make([]byte, s.maxSz)
	sub := ""
	for i := 0; i < s.files; i++ {
		if i%s.perDir == 0 {
			sub = filepath.Join(s.dir, fmt.Sprintf("d%04d", i/s.perDir))
			if err := os.Mkdir(sub, 0o755); err != nil {
				return sum, err
			}
			sum.Dirs++
		}
		data := content(buf, s, uint64(i))
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%05d", i%s.perDir)), data, 0o644); err != nil {
			return sum, err
		}
		sum.Files++
		sum.Bytes += int64(len(data))
	}
	return sum, nil
}

// content fills buf with file i's bytes: lines of lowercase words, so it
// compresses roughly like text but never deduplicates across files.
func content(buf []byte, s spec, i uint64) []byte {
	r := rand.New(rand.NewPCG(s.seed, i))
	n := s.minSize + r.IntN(s.maxSz-s.minSize+1)
	b := buf[:n]
	for j := range b {
		switch x := r.IntN(40); {
		case x == 0 || j%64 == 63:
			b[j] = '\n'
		case x < 6:
			b[j] = ' '
		default:
			b[j] = byte('a' + x%26)
		}
	}
	return b
}
