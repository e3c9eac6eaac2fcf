"""Filters of a twin's event log: by kind, category and node, after a sequence number, oldest
first (the API pages them as it pages every list)."""
import django_filters
from django import forms

from twin.models import TwinEvent


class WholeNumberFilter(django_filters.NumberFilter):
    field_class = forms.IntegerField


class TwinEventFilterSet(django_filters.FilterSet):
    kind = django_filters.CharFilter()
    category = django_filters.CharFilter()
    node = WholeNumberFilter()
    since_seq = WholeNumberFilter(field_name="seq", lookup_expr="gt", label="only events after this sequence number")

    class Meta:
        model = TwinEvent
        fields = ["kind", "category", "node"]

    @property
    def qs(self):
        return super().qs.order_by("seq")
