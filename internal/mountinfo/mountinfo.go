package mountinfo

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Entry is one line of /proc/self/mountinfo.
type Entry struct {
	Point  string
	FSType string
	Source string
	Dev    string // the device number, "major:minor"
}

// Mounts lists the calling process's mounts, in mount order.
func Mounts() ([]Entry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f)
}

// Parse reads mountinfo lines; malformed lines are skipped.
func Parse(r io.Reader) ([]Entry, error) {
	var out []Entry
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
		out = append(out, Entry{Point: unescape(fields[4]), FSType: fields[sep+1], Source: unescape(fields[sep+2]), Dev: fields[2]})
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

// Find returns the mount at path, if any.
func Find(path string) (Entry, bool, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Entry{}, false, err
	}
	all, err := Mounts()
	if err != nil {
		return Entry{}, false, err
	}
	for i := len(all) - 1; i >= 0; i-- { // the last mount on a point is visible
		if all[i].Point == abs {
			return all[i], true, nil
		}
	}
	return Entry{}, false, nil
}

// FuseType is the file system type of doppel mounts.
const FuseType = "fuse.doppel"

// Enclosing finds the innermost doppel mount holding the host path p
// (which need not exist yet) and p's "/"-rooted path inside it.
func Enclosing(p string) (Entry, string, bool, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return Entry{}, "", false, err
	}
	all, err := Mounts()
	if err != nil {
		return Entry{}, "", false, err
	}
	best, bestLen := -1, -1
	for i, m := range all { // later entries shadow earlier ones on the same point
		if !Within(abs, m.Point) || len(m.Point) < bestLen {
			continue
		}
		best, bestLen = i, len(m.Point)
	}
	if best < 0 || all[best].FSType != FuseType {
		return Entry{}, "", false, nil
	}
	m := all[best]
	rel, err := filepath.Rel(m.Point, abs)
	if err != nil {
		return Entry{}, "", false, err
	}
	return m, path.Clean("/" + filepath.ToSlash(rel)), true, nil
}

// Within reports whether p is dir or below it.
func Within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}
