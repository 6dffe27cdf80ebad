"""Hand-offs: what Faultline hands to the tools operators already run. Prometheus metrics (``metrics.py``),
notifications by webhook, Slack or e-mail (``services/notifications.py``) and node drains with a human in the loop
(``services/drains.py``). The layer sits above ``diagnoses`` and learns of new diagnoses through its signal
(``diagnoses.signals.diagnosis_recorded``), so a failing hand-off never blocks analysis."""
