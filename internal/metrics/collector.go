package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// collector turns Ops and Figures into Prometheus metrics at scrape time.
type collector struct {
	ops     *Ops
	figures func() (Figures, error)
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- opDuration
	ch <- opErrors
	ch <- opEIO
	for _, m := range figureMetrics {
		ch <- m.desc
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for op := range numOps {
		n := c.ops.Read(op)
		ch <- prometheus.MustNewConstHistogram(opDuration, n.Count, n.Sum.Seconds(), cumulative(&n), op.String())
		ch <- prometheus.MustNewConstMetric(opErrors, prometheus.CounterValue, float64(n.Errors), op.String())
		ch <- prometheus.MustNewConstMetric(opEIO, prometheus.CounterValue, float64(n.EIO), op.String())
	}
	f, err := c.figures()
	if err != nil {
		for _, m := range figureMetrics {
			ch <- prometheus.NewInvalidMetric(m.desc, err)
		}
		return
	}
	for _, m := range figureMetrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.of(&f))
	}
}

// cumulative returns the histogram's buckets keyed by upper bound in
// seconds, each counting the observations at or below its bound.
func cumulative(n *OpCounts) map[float64]uint64 {
	out := make(map[float64]uint64, len(LatencyBounds))
	var sum uint64
	for i, b := range LatencyBounds {
		sum += n.Buckets[i]
		out[b.Seconds()] = sum
	}
	return out
}
