"""The hand-offs' writes: ``notifications`` (rules, incidents, deliveries) and ``drains``."""
