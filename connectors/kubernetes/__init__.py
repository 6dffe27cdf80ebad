"""Kubernetes and Kueue: Workload discovery, the workload's pods, container statuses, events and logs."""
