package control

// Metrics fetches the daemon's Prometheus scrape (GET /metrics, served by
// Handlers.Metrics) in the text format.
func (c *Client) Metrics() ([]byte, error) { return c.Raw("GET", "/metrics", nil) }
