package ops

// ExportRequest asks for volume files to be served as NBD exports
// (`doppel nbd`).
type ExportRequest struct {
	Files []ExportFile `json:"files"`
	// Listen is "unix:/absolute/path" or "tcp:HOST:PORT".
	Listen   string `json:"listen"`
	ReadOnly bool   `json:"read_only,omitempty"`
	// Create, when positive, makes each file, which must not exist, as a
	// sparse file of that size with fixed 4 KiB chunking.
	Create int64 `json:"create,omitempty"`
	// TLS, when set, makes clients upgrade to TLS before anything else.
	TLS *ExportTLS `json:"tls,omitempty"`
}

// ExportTLS names the PEM files of an export's TLS: absolute paths, read
// by the process that serves the export.
type ExportTLS struct {
	Cert string `json:"cert"`
	Key  string `json:"key"`
	// ClientCA, when set, makes clients prove who they are with a
	// certificate it signed.
	ClientCA string `json:"client_ca,omitempty"`
}

// ExportFile is one file to export and the name clients ask for.
type ExportFile struct {
	Path string `json:"path"`
	Name string `json:"name"`
}

// ExportStatus is one running NBD server and its exports, as the export
// request's start and `doppel status` report them.
type ExportStatus struct {
	Listen   string `json:"listen"`
	ReadOnly bool   `json:"read_only,omitempty"`
	// TLS: clients must use TLS; ClientAuth: and a client certificate.
	TLS        bool         `json:"tls,omitempty"`
	ClientAuth bool         `json:"client_auth,omitempty"`
	Exports    []ExportInfo `json:"exports"`
}

// ExportInfo is one export of a running server.
type ExportInfo struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	Clients int    `json:"clients"`
}
