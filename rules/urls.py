from django.urls import path

from rules import views

app_name = "rules"

urlpatterns = [
    path("", views.ruleset_list, name="rulesets"),
    path("cases/", views.case_list, name="cases"),
    path("cases/promote", views.case_promote_view, name="case-promote"),
    path("reanalyse/", views.reanalyse, name="reanalyse"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("runs/<int:pk>/cancel", views.run_cancel, name="run-cancel"),
    path("sets/<str:name>/", views.ruleset_detail, name="ruleset"),
    path("sets/<str:name>/diff", views.ruleset_diff, name="diff"),
    path("sets/<str:name>/edit", views.editor, name="editor"),
    path("sets/<str:name>/check", views.editor_check, name="editor-check"),
    path("sets/<str:name>/r<int:number>/", views.revision_detail, name="revision"),
    path("sets/<str:name>/r<int:number>/activate", views.revision_activate, name="activate"),
    path("sets/<str:name>/r<int:number>/try", views.revision_try, name="try"),
    path("sets/<str:name>/r<int:number>/explore", views.revision_explore, name="explore"),
    path("sets/<str:name>/r<int:number>/cases", views.revision_cases, name="revision-cases"),
    path("sets/<str:name>/r<int:number>/backtest", views.revision_backtest, name="backtest"),
]
