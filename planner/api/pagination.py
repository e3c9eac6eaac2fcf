"""Every list the API answers has one shape: ``{count, next, previous, results}``, ``page`` and
``page_size`` (1 to 500) in the query."""
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.utils.urls import remove_query_param, replace_query_param


class PlannerPagination(PageNumberPagination):
    """Pages of up to ``max_page_size`` rows; asking for more (or for a page size that is not a
    whole number) answers 400 naming the limit instead of silently returning fewer."""

    page_size_query_param = "page_size"
    max_page_size = 500

    def get_page_size(self, request):
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        try:
            size = int(raw)
        except ValueError:
            size = 0
        if not 1 <= size <= self.max_page_size:
            raise ValidationError({self.page_size_query_param: [f"a whole number from 1 to {self.max_page_size}"]})
        return size

    def page_number(self, request) -> int:
        """The page asked for: a whole number from 1 (400 naming ``page`` otherwise)."""
        try:
            page = int(request.query_params.get(self.page_query_param, 1))
        except ValueError:
            page = 0
        if page < 1:
            raise ValidationError({self.page_query_param: ["a whole number from 1"]})
        return page

    def links(self, request, page: int, size: int, count: int) -> dict:
        """``count``, ``next`` and ``previous`` of a page of a list computed outside a queryset (a
        sweep's stored columns), as ``get_paginated_response`` gives them for a queryset."""
        url = request.build_absolute_uri()
        previous = None
        if page > 1:
            previous = remove_query_param(url, self.page_query_param) if page == 2 else \
                replace_query_param(url, self.page_query_param, page - 1)
        return {"count": count, "next": replace_query_param(url, self.page_query_param, page + 1)
                if page * size < count else None, "previous": previous}
