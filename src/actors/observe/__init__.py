"""What the process says about itself: Prometheus metrics, OpenTelemetry spans, structured logs, and
the memory and garbage-collector settings of a long-running server."""
