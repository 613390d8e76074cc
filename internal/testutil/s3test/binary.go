package s3test

import (
	"os"
	"os/exec"
	"path/filepath"
)

// binary returns the path of the versitygw binary, or "" if none is found.
func binary() string {
	if p := os.Getenv("DOPPEL_VERSITYGW"); p != "" {
		return p
	}
	var dirs []string
	if d := os.Getenv("DOPPEL_TOOLS"); d != "" {
		dirs = append(dirs, d)
	}
	dirs = append(dirs, "/var/cache/doppel/bin")
	if d, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs, filepath.Join(d, "doppel", "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "versitygw")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	return ""
}
