"""Writes, one module per entity or step, each function ``<entity>_<action>(*, ...)``: ``attempts``
(storing attempts and their bundles, queueing their analysis), ``gathering`` (the one place that asks a
cluster's connectors for an attempt), ``analysis`` (analysing and recording diagnoses), ``discovery``
(polling clusters), ``clusters`` (their configuration), ``reviews``. Pages, the API, tasks and commands
call these; nothing else writes."""
