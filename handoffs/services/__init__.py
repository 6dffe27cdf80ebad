"""The hand-offs' writes: ``outbox`` (new diagnoses whose hand-offs are due), ``notifications`` (rules, incidents,
deliveries) and ``drains``."""
