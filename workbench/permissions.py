"""The permissions behind the rule workbench's own writes (granted to the rule editor and admin roles,
``access/roles.py``); viewers and triagers only read."""

PROMOTE_CASE = "workbench.add_regressioncase"  # keep a reviewed attempt as a regression case
RUN_BATCH = "workbench.add_batchrun"  # backtest a revision, reanalyse stored attempts
