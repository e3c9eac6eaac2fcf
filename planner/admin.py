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
    list_display = ["slug", "name", "currency", "price_date", "confidence"]
    inlines = [PriceItemInline]
