package ops

// ScanRequest asks which distinct contents the trees at Paths hold,
// leaving out those the tree at Since (if any) holds too.
type ScanRequest struct {
	Paths []string `json:"paths"`
	Since string   `json:"since,omitempty"`
}

// ContentGroup is the files that share one content.
type ContentGroup struct {
	ID    string   `json:"id"` // names the content: a hash of its extent map
	Size  int64    `json:"size"`
	Paths []string `json:"paths"` // "/"-rooted inside the volume
}
