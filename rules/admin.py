from django.contrib import admin

from rules.models import RuleSet, RuleSetRevision


class RevisionInline(admin.TabularInline):
    model = RuleSetRevision
    fields = ("number", "active", "digest", "author", "message", "created")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(RuleSet)
class RuleSetAdmin(admin.ModelAdmin):
    list_display = ("name", "created")
    search_fields = ("name",)
    inlines = [RevisionInline]


@admin.register(RuleSetRevision)
class RuleSetRevisionAdmin(admin.ModelAdmin):
    list_display = ("ruleset", "number", "active", "digest", "author", "created")
    list_filter = ("ruleset", "active")
    readonly_fields = ("ruleset", "number", "text", "digest", "parent", "author", "created", "active")

    def has_add_permission(self, request):
        return False  # revisions are immutable text with a digest: the rule workbench creates them
