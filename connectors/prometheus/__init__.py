"""Prometheus: PromQL ``query_range`` for an attempt's nodes and window (DCGM exporter, node_exporter)."""
