"""Filters of a twin's event log: by kind, category and node, after a sequence number, at most
``limit`` (1 to 1000, default 200), oldest first."""
import django_filters
from django import forms

from twin.models import TwinEvent

DEFAULT_LIMIT = 200


class WholeNumberFilter(django_filters.NumberFilter):
    field_class = forms.IntegerField


class TwinEventFilterSet(django_filters.FilterSet):
    kind = django_filters.CharFilter()
    category = django_filters.CharFilter()
    node = WholeNumberFilter()
    since_seq = WholeNumberFilter(field_name="seq", lookup_expr="gt", label="only events after this sequence number")
    limit = WholeNumberFilter(method="all_of_them", min_value=1, max_value=1000, label="at most 1000")

    class Meta:
        model = TwinEvent
        fields = ["kind", "category", "node"]

    def all_of_them(self, queryset, name, value):
        """``limit`` cuts the ordered result in ``qs``, not the query."""
        return queryset

    @property
    def qs(self):
        return super().qs.order_by("seq")[: self.form.cleaned_data.get("limit") or DEFAULT_LIMIT]
