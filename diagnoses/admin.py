from django.contrib import admin

from diagnoses.models import Attempt, Cluster, Diagnosis, Evidence, Job, Node, NodeEvent, Review


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = ("name", "connector", "created")
    search_fields = ("name",)


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
    readonly_fields = ("bundle", "record", "received", "state_changed", "analysis_started", "analysis_runs")


class EvidenceInline(admin.TabularInline):
    model = Evidence
    fields = ("position", "role", "rule", "node", "time", "ref", "text")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(Diagnosis)
class DiagnosisAdmin(admin.ModelAdmin):
    list_display = ("attempt", "outcome", "domain", "subdomain", "revision", "created")
    list_filter = ("outcome", "domain", "revision")
    search_fields = ("attempt__job__job_id", "subdomain", "root_cause_rule")
    list_select_related = ("attempt__job__cluster", "revision__ruleset")
    raw_id_fields = ("attempt", "revision", "root_cause_nodes")
    readonly_fields = ("document_json", "created")
    inlines = [EvidenceInline]


@admin.register(Evidence)
class EvidenceAdmin(admin.ModelAdmin):
    list_display = ("diagnosis", "position", "role", "rule", "node", "time", "ref")
    list_filter = ("role",)
    search_fields = ("rule", "ref")
    list_select_related = ("diagnosis__attempt__job__cluster", "node")
    raw_id_fields = ("diagnosis", "node")


@admin.register(NodeEvent)
class NodeEventAdmin(admin.ModelAdmin):
    list_display = ("diagnosis", "time", "node", "source", "rule", "role", "ref")
    list_filter = ("role", "kind")
    search_fields = ("rule", "ref")
    list_select_related = ("diagnosis__attempt__job__cluster", "node")
    raw_id_fields = ("diagnosis", "node")


@admin.register(Review)
class ReviewAdmin(admin.ModelAdmin):
    list_display = ("diagnosis", "verdict", "reviewer", "created")
    list_filter = ("verdict",)
    list_select_related = ("diagnosis__attempt__job__cluster", "reviewer")
    raw_id_fields = ("diagnosis", "reviewer")
