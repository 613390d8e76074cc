package ops

// DiffRequest asks for `doppel diff` of trees A and B.
type DiffRequest struct {
	A     string `json:"a"`
	B     string `json:"b"`
	Patch bool   `json:"patch,omitempty"` // unified diffs of text files
	Full  bool   `json:"full,omitempty"`  // walk both trees even if they share an origin
}

// DiffEntry is one difference between two trees, git-style: A (only in
// the second tree), D (only in the first), M (modified: What says how), T
// (the type changed). Path is relative to both trees.
type DiffEntry struct {
	Status  string   `json:"status"`
	Path    string   `json:"path"`
	Type    string   `json:"type"`
	What    []string `json:"what,omitempty"`
	OldSize int64    `json:"old_size"`
	NewSize int64    `json:"new_size"`
	Patch   string   `json:"patch,omitempty"`
}

// DiffResult lists the differences and how they were found.
type DiffResult struct {
	Entries []DiffEntry `json:"entries"`
	// Method is "journal" when the trees share an origin and only the
	// changes since then were compared, "walk" when both were walked.
	Method string `json:"method"`
	Since  uint64 `json:"since_version,omitempty"`
	// Compared counts the entries compared: what the diff cost.
	Compared int `json:"compared"`
	// JournalRead counts the journal keys a journal diff read.
	JournalRead int `json:"journal_read,omitempty"`
}
