"""Catalogue filters, for the API's lists and the catalogue page alike: slug, vendor
(case-insensitive), confidence and a free-text ``q`` over name, slug and notes, plus the fields that
say what kind of part an entry is."""
import django_filters
from django.db.models import Q

from planner import models


class CatalogFilterSet(django_filters.FilterSet):
    slug = django_filters.CharFilter()
    vendor = django_filters.CharFilter(lookup_expr="iexact")
    q = django_filters.CharFilter(method="filter_text", label="Text in name, slug or notes")

    def filter_text(self, queryset, name, value):
        return queryset.filter(Q(name__icontains=value) | Q(slug__icontains=value) | Q(notes__icontains=value))


def catalog_filterset(model, kind_fields: list[str]) -> type[CatalogFilterSet]:
    """A filter set for ``model`` with the common filters plus exact filters on ``kind_fields``."""
    meta = type("Meta", (), {"model": model, "fields": ["slug", "vendor", "confidence", *kind_fields]})
    return type(f"{model.__name__}FilterSet", (CatalogFilterSet,), {"Meta": meta})


KIND_FIELDS = {
    models.Accelerator: ["form_factor", "scaleup_link"],
    models.CPU: ["pcie_gen"],
    models.NIC: ["protocol"],
    models.Switch: ["protocol", "radix"],
    models.LinkPart: ["kind"],
    models.ComputeNodeType: ["nvlink_topology"],
    models.StorageNodeType: [],
    models.PriceBook: ["currency"],
}
FILTERSETS = {model: catalog_filterset(model, fields) for model, fields in KIND_FIELDS.items()}
