"""The permissions behind the rule workbench's writes (granted to the rule editor and admin roles,
``access/roles.py``); viewers and triagers only read. Pages and the API check the same names."""

EDIT_RULES = "rules.add_rulesetrevision"  # create rule sets and revisions (drafts)
ACTIVATE = "rules.add_activation"  # activate a revision (or roll back to an older one)
PROMOTE_CASE = "rules.add_regressioncase"  # keep a reviewed attempt as a regression case
RUN_BATCH = "rules.add_batchrun"  # backtest a revision, reanalyse stored attempts
