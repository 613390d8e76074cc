package importer

import "time"

// Progress counts what an import did so far.
type Progress struct {
	Files     int64 `json:"files"` // regular files whose content is in
	Dirs      int64 `json:"dirs"`
	Symlinks  int64 `json:"symlinks"`
	Specials  int64 `json:"specials"`   // fifos, sockets, device nodes
	HardLinks int64 `json:"hard_links"` // extra names of entries already imported
	Bytes     int64 `json:"bytes"`      // bytes read from SRC
	Failed    int64 `json:"failed"`     // entries that could not be imported
	// TotalFiles and TotalBytes count SRC's distinct regular files; they
	// grow until Counted.
	TotalFiles int64         `json:"total_files"`
	TotalBytes int64         `json:"total_bytes"`
	Counted    bool          `json:"counted"`
	Elapsed    time.Duration `json:"elapsed_ns"`
}

// Failure is a source entry that could not be imported.
type Failure struct {
	Path string `json:"path"`
	Err  string `json:"error"`
}

// Summary is the outcome of an import.
type Summary struct {
	Progress
	Target string `json:"target"` // the volume path created
	// StoredBytes is the growth of the volume's stored chunk data during
	// the import; the caller that owns the volume fills it in.
	StoredBytes int64     `json:"stored_bytes"`
	Failures    []Failure `json:"failures,omitempty"`
	Warnings    []string  `json:"warnings,omitempty"` // the first maxWarnings
	WarnCount   int64     `json:"warning_count"`

	parent uint64 // where Target's entry lives
	name   string
}

// TargetEntry is the directory inode and name of the entry created.
func (s *Summary) TargetEntry() (parent uint64, name string) { return s.parent, s.name }

const maxWarnings = 20
