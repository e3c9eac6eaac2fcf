"""Versioned writes: every read of a versioned entry (plans, workloads, price books) carries an ETag,
its version; a write runs on the row locked for its transaction, so concurrent changes apply one
after the other and none is lost, and a write that sends If-Match with an older ETag answers 412
and changes nothing."""
from django.db import transaction
from rest_framework.response import Response

from planner.api.errors import PreconditionFailed


def entry_etag(version: int) -> str:
    """A versioned entry's ETag: its version, which every change raises."""
    return f'"{version}"'


def locked_for_write(model, entry, request):
    """``entry`` re-read under a row lock (inside the caller's transaction), after checking the
    request's If-Match against its version: 412 when it names an older one."""
    entry = model.objects.select_for_update().get(pk=entry.pk)
    wanted = request.headers.get("If-Match")
    if wanted is not None and wanted.strip() not in ("*", entry_etag(entry.version)):
        raise PreconditionFailed(f"{model._meta.verbose_name} '{entry.slug}' changed since you read it "
                                 f"(it is at version {entry.version}, you sent If-Match {wanted}): "
                                 "read it again and reapply your change")
    return entry


class VersionedEntryMixin:
    """A viewset's retrieve and update with the entry's ETag and If-Match (the module's rule)."""

    def retrieve(self, request, *args, **kwargs):
        response = super().retrieve(request, *args, **kwargs)
        response["ETag"] = entry_etag(response.data["version"])
        return response

    def update(self, request, *args, **kwargs):
        model = self.get_queryset().model
        with transaction.atomic():
            entry = locked_for_write(model, self.get_object(), request)  # visibility and ownership first
            serializer = self.get_serializer(entry, data=request.data, partial=kwargs.pop("partial", False))
            serializer.is_valid(raise_exception=True)
            self.before_update(entry, serializer.validated_data)
            serializer.save(version=entry.version + 1)
        response = Response(serializer.data)
        response["ETag"] = entry_etag(serializer.instance.version)
        return response

    def before_update(self, entry, changes: dict) -> None:
        """What a viewset does in the write's transaction before ``changes`` are saved (nothing here)."""
