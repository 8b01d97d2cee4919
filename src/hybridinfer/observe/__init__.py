"""What the system says about itself: Prometheus metrics, dashboard statistics, spans,
OpenTelemetry export and JSON logs. Everything here reads finished traces or readings."""
