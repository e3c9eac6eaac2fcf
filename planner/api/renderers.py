"""Renderers for files a view builds itself (CSV text, XLSX bytes), and the response that sends one
as a download."""
from rest_framework.renderers import BaseRenderer
from rest_framework.response import Response

from planner.services.spreadsheets import XLSX_MEDIA_TYPE


class FileRenderer(BaseRenderer):
    """A file the view has already built (text or bytes), passed through as it is."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data if isinstance(data, str | bytes) else b""


class CSVRenderer(FileRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"


class XLSXRenderer(FileRenderer):
    media_type = XLSX_MEDIA_TYPE
    format = "xlsx"
    charset = None
    render_style = "binary"


def attachment(content, filename: str) -> Response:
    """``content`` (a built file) as a download named ``filename``."""
    response = Response(content)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
