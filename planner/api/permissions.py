from django.conf import settings
from rest_framework.permissions import SAFE_METHODS, DjangoModelPermissions


class CatalogPermission(DjangoModelPermissions):
    """Reads need a login unless ``CATALOG_PUBLIC_READ`` opens them; writes need model permissions.

    Anonymous writes answer 401 (the client should authenticate); authenticated users without
    the add/change/delete permission answer 403.
    """

    def has_permission(self, request, view):
        user = request.user
        if request.method in SAFE_METHODS:
            return bool(settings.CATALOG_PUBLIC_READ or (user and user.is_authenticated))
        return super().has_permission(request, view)
