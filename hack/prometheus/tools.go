//go:build tools

// Package tools pins the upstream Prometheus server for the end-to-end suite:
// Debian's prometheus 2.42.0+ds is built without Kubernetes service discovery
// (`field kubernetes_sd_configs not found in type config.ScrapeConfig`), so
// hack/build-prometheus.sh builds cmd/prometheus from this module instead.
package tools

import _ "github.com/prometheus/prometheus/cmd/prometheus"
