package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct {
	Point  string
	FSType string
	Source string
}

func mounts() ([]mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMountinfo(f)
}

// parseMountinfo reads mountinfo lines; malformed lines are skipped.
func parseMountinfo(r io.Reader) ([]mountEntry, error) {
	var out []mountEntry
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		sep := -1
		for i, x := range fields {
			if x == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || sep+2 >= len(fields) {
			continue
		}
		out = append(out, mountEntry{Point: unescape(fields[4]), FSType: fields[sep+1], Source: unescape(fields[sep+2])})
	}
	return out, s.Err()
}

// unescape undoes mountinfo's octal escapes (\040 for space and so on).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// findMount returns the mount at path, if any.
func findMount(path string) (mountEntry, bool, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return mountEntry{}, false, err
	}
	all, err := mounts()
	if err != nil {
		return mountEntry{}, false, err
	}
	for i := len(all) - 1; i >= 0; i-- { // the last mount on a point is visible
		if all[i].Point == abs {
			return all[i], true, nil
		}
	}
	return mountEntry{}, false, nil
}

const fuseType = "fuse.doppel"

// doppelStoreOf returns the store mounted at mountpoint.
func doppelStoreOf(mountpoint string) (string, error) {
	m, ok, err := findMount(mountpoint)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%s is not a mount point", mountpoint)
	}
	if m.FSType != fuseType {
		return "", errors.New(mountpoint + " is not a doppel mount (it is " + m.FSType + ")")
	}
	return m.Source, nil
}
