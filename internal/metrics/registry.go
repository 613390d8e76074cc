package metrics

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry returns a private registry (never Prometheus's global one)
// holding doppel's metrics, which read ops and call figures at each scrape,
// and the Go runtime and process metrics of the daemon.
func NewRegistry(ops *Ops, figures func() (Figures, error)) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		&collector{ops: ops, figures: figures},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// Handler serves reg in the Prometheus text format. A metric that cannot
// be read is left out and logged; the others are still served.
func Handler(reg *prometheus.Registry, log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      errorLog{log},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// errorLog passes promhttp's errors on to the daemon's log.
type errorLog struct{ log *slog.Logger }

func (e errorLog) Println(v ...any) { e.log.Warn("metrics scrape", "err", fmt.Sprint(v...)) }
