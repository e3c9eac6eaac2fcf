from django.contrib import admin

from planner import models


class CatalogAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "vendor", "confidence", "updated_at"]
    list_filter = ["confidence", "vendor"]
    search_fields = ["slug", "name", "vendor"]


for model in (
    models.Accelerator,
    models.CPU,
    models.NIC,
    models.Switch,
    models.LinkPart,
    models.ComputeNodeType,
    models.StorageNodeType,
):
    admin.site.register(model, CatalogAdmin)


class PriceItemInline(admin.TabularInline):
    model = models.PriceItem
    extra = 0


@admin.register(models.PriceBook)
class PriceBookAdmin(CatalogAdmin):
    """Catalogue editors keep the shared books; a user's own book (their quotes) is theirs alone,
    shown here to superusers only."""

    list_display = ["slug", "name", "owner", "currency", "price_date", "confidence"]
    list_filter = ["currency", "confidence"]
    inlines = [PriceItemInline]

    def get_queryset(self, request):
        books = super().get_queryset(request).select_related("owner")
        return books if request.user.is_superuser else books.filter(owner__isnull=True)


@admin.register(models.ClusterPlan)
class ClusterPlanAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "node_type", "node_count", "fabric_layers", "owner", "visibility"]
    list_filter = ["visibility", "fabric_layers", "node_type"]
    search_fields = ["slug", "name"]


@admin.register(models.Workload)
class WorkloadAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "kind", "gpus", "tp", "pp", "ep", "collective", "owner", "visibility"]
    list_filter = ["visibility", "kind", "collective"]
    search_fields = ["slug", "name"]


@admin.register(models.AccessToken)
class AccessTokenAdmin(admin.ModelAdmin):
    list_display = ["user", "name", "prefix", "read_only", "created_at", "last_used_at"]
    list_filter = ["read_only"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]

    def has_add_permission(self, request):
        """Keys are issued through the API, which shows them once; the admin can only revoke."""
        return False
