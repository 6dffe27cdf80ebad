"""The rule workbench's pages, under /rules/."""

from django.urls import path

from workbench.views import cases, drafts, editor, rulesets, runs, trials

app_name = "workbench"

urlpatterns = [
    path("", rulesets.ruleset_list, name="rulesets"),
    path("cases/", cases.case_list, name="cases"),
    path("cases/promote", cases.case_promote_view, name="case-promote"),
    path("reanalyse/", runs.reanalyse, name="reanalyse"),
    path("patterns/<str:key>/draft", drafts.pattern_draft, name="pattern-draft"),
    path("patterns/<str:key>/reanalyse", drafts.pattern_reanalyse, name="pattern-reanalyse"),
    path("runs/<int:pk>/", runs.run_detail, name="run"),
    path("runs/<int:pk>/cancel", runs.run_cancel, name="run-cancel"),
    path("sets/<str:name>/", rulesets.ruleset_detail, name="ruleset"),
    path("sets/<str:name>/diff", rulesets.ruleset_diff, name="diff"),
    path("sets/<str:name>/edit", editor.editor, name="editor"),
    path("sets/<str:name>/check", editor.editor_check, name="editor-check"),
    path("sets/<str:name>/r<int:number>/", rulesets.revision_detail, name="revision"),
    path("sets/<str:name>/r<int:number>/activate", rulesets.revision_activate, name="activate"),
    path("sets/<str:name>/r<int:number>/try", trials.revision_try, name="try"),
    path("sets/<str:name>/r<int:number>/explore", trials.revision_explore, name="explore"),
    path("sets/<str:name>/r<int:number>/cases", cases.revision_cases, name="revision-cases"),
    path("sets/<str:name>/r<int:number>/backtest", runs.revision_backtest, name="backtest"),
    path("sets/<str:name>/r<int:number>/patterns/<str:key>/", drafts.pattern_trial, name="pattern-trial"),
]
