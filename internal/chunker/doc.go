// Package chunker splits a byte stream into chunks: content-defined (FastCDC)
// so that insertions and deletions move only nearby boundaries and shifted
// content still deduplicates, or fixed-size blocks aligned to file offsets for
// block-structured data such as VM images and NBD exports.
//
// A Policy names the method and its sizes; it is stored in each volume's
// configuration, and New turns it into a Chunker. For a given policy the
// boundaries are a pure function of the data (and, for fixed blocks, the file
// offset) and must never change between releases, or new writes would stop
// deduplicating against stored chunks; golden tests pin them.
//
// A Chunker only decides where to cut; it never copies data.
//
// Files:
//
//   - chunker.go: the Chunker interface and New.
//   - policy.go: Policy, its defaults, parsing, validation and formatting.
//   - cdc.go: FastCDC with normalized chunking; scanGeneric, the gear scan
//     two bytes a step.
//   - scan_amd64.go, scan_amd64.s: the gear scan four bytes a step in
//     assembly; scan_other.go: scanGeneric elsewhere (or with purego).
//   - gear.go: the pinned gear table.
//   - fixed.go: fixed-size blocks aligned to file offsets.
package chunker
