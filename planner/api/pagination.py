from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination


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
