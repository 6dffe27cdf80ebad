"""Loki: LogQL ``query_range`` per node and stream over an attempt's window, with pagination."""
