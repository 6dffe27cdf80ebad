from django.contrib import admin
from django.db import transaction

from diagnoses.models import Attempt, Cluster, Diagnosis, Evidence, Job, Node, NodeEvent, Review, Source
from diagnoses.services import clusters, discovery, verdict_days


class SourceInline(admin.StackedInline):
    model = Source
    fields = ("role", "name", "kind", "settings", "position", "failures", "last_error", "last_ok", "retry_after")
    readonly_fields = ("failures", "last_error", "last_ok", "retry_after")
    extra = 0


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    """Clusters and their connectors. Settings are checked by building the connectors (a bad setting is a
    form error naming it); saving writes the configuration only, never discovery's state."""

    list_display = ("name", "connector", "enabled", "poll_interval", "last_success", "failures", "created")
    list_filter = ("enabled", "connector")
    search_fields = ("name",)
    fieldsets = [
        (None, {"fields": ["name", "connector", "scheduler_settings", "enabled", "poll_interval", "gather_delay"]}),
        (
            "Discovery",
            {
                "fields": [
                    "last_poll",
                    "last_success",
                    "failures",
                    "last_error",
                    "next_poll",
                    "last_found",
                    "skipped",
                    "cursor",
                ]
            },  # fmt: skip
        ),
    ]
    readonly_fields = fieldsets[1][1]["fields"]
    inlines = [SourceInline]
    actions = ["poll_now"]

    def save_model(self, request, obj, form, change):
        clusters.cluster_save(cluster=obj)

    def save_formset(self, request, form, formset, change):
        formset.save(commit=False)
        for source in formset.deleted_objects:
            source.delete()
        for source in [*formset.new_objects, *(changed for changed, _ in formset.changed_objects)]:
            clusters.source_save(source=source)

    @admin.action(description="Poll the selected clusters now", permissions=["change"])
    def poll_now(self, request, queryset):
        for cluster in queryset.exclude(connector=Cluster.NO_SCHEDULER):
            discovery.cluster_poll_now(cluster=cluster)
        self.message_user(request, "Polls queued; the Clusters page shows how they went.")


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ("name", "cluster")
    list_filter = ("cluster",)
    search_fields = ("name",)


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("job_id", "cluster", "name", "user", "scheduler")
    list_filter = ("cluster", "scheduler")
    search_fields = ("job_id", "name", "user")


@admin.register(Attempt)
class AttemptAdmin(admin.ModelAdmin):
    list_display = ("__str__", "state", "end", "user", "analysis_state", "current_diagnosis")
    list_filter = ("cluster", "analysis_state", "state")
    search_fields = ("job__job_id", "name", "user")
    date_hierarchy = "end"
    list_select_related = ("job__cluster", "current_diagnosis__attempt__job__cluster")
    raw_id_fields = ("job", "nodes", "current_diagnosis")
    # the verdict of record is kept by diagnoses/services/verdicts.py only
    readonly_fields = ("bundle", "record", "discovery", "gathered", "received", "state_changed", "analysis_started",
                       "analysis_runs", "verdict_source", "verdict_outcome", "verdict_domain", "verdict_subdomain",
                       "verdict_nodes", "verdict_review", "engine_disagrees", "needs_review")  # fmt: skip

    def save_model(self, request, obj, form, change):
        """Save, and move the attempt in the daily rollup (its end or cluster may have changed); a deletion
        takes it out through ``pre_delete`` (``verdict_days.attempt_deleted``)."""
        with transaction.atomic():
            if change:
                verdict_days.attempt_uncount(obj.pk)
            super().save_model(request, obj, form, change)
            verdict_days.attempt_count(obj.pk)


class ViewOnly:
    """An admin that only shows its rows: what the engine or a service writes, never edited by hand."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class EvidenceInline(admin.TabularInline):
    model = Evidence
    fields = ("position", "role", "rule", "node", "time", "ref", "text")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(Diagnosis)
class DiagnosisAdmin(ViewOnly, admin.ModelAdmin):
    """Diagnoses, read only, with their evidence and node events: the engine writes them, and people correct them by
    reviews (an edit here would bypass the verdict of record and its daily rollups)."""

    list_display = ("attempt", "outcome", "domain", "subdomain", "revision", "created")
    list_filter = ("outcome", "domain", "revision")
    search_fields = ("attempt__job__job_id", "subdomain", "root_cause_rule")
    list_select_related = ("attempt__job__cluster", "revision__ruleset")
    raw_id_fields = ("attempt", "revision", "root_cause_nodes")
    readonly_fields = ("document_json", "created")
    inlines = [EvidenceInline]


@admin.register(Evidence)
class EvidenceAdmin(ViewOnly, admin.ModelAdmin):
    list_display = ("diagnosis", "position", "role", "rule", "node", "time", "ref")
    list_filter = ("role",)
    search_fields = ("rule", "ref")
    list_select_related = ("diagnosis__attempt__job__cluster", "node")
    raw_id_fields = ("diagnosis", "node")


@admin.register(NodeEvent)
class NodeEventAdmin(ViewOnly, admin.ModelAdmin):
    list_display = ("diagnosis", "time", "node", "source", "rule", "role", "ref")
    list_filter = ("role", "kind")
    search_fields = ("rule", "ref")
    list_select_related = ("diagnosis__attempt__job__cluster", "node")
    raw_id_fields = ("diagnosis", "node")


@admin.register(Review)
class ReviewAdmin(ViewOnly, admin.ModelAdmin):
    """Reviews, read only: they are given and withdrawn on the attempt page or through the API (one service keeps
    their rules and the attempts' verdicts of record)."""

    list_display = ("diagnosis", "verdict", "reviewer", "created", "withdrawn")
    list_filter = ("verdict",)
    list_select_related = ("diagnosis__attempt__job__cluster", "reviewer")
    raw_id_fields = ("diagnosis", "reviewer", "withdrawn_by")
