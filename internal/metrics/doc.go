// Package metrics defines every metric the daemon exports and serves them
// in the Prometheus text format from a private registry.
//
// The layers do not call into Prometheus. On the hot path they only bump
// atomic counters: the FUSE frontend records each operation in an Ops
// table, and the content and namespace layers keep their own running
// totals. At scrape time a collector reads Ops and asks for the volume's
// Figures (those totals plus the space report), and turns them into
// Prometheus metrics. docs/OBSERVABILITY.md lists every metric; a test
// keeps that list complete.
package metrics
