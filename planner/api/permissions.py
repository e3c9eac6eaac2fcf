from django.conf import settings
from rest_framework.permissions import SAFE_METHODS, BasePermission, DjangoModelPermissions

from planner.models import AccessToken


class TokenScopePermission(BasePermission):
    """A read-only token may read but never write."""

    message = "this API token is read-only"

    def has_permission(self, request, view):
        token = request.auth
        return request.method in SAFE_METHODS or not (isinstance(token, AccessToken) and token.read_only)


class CatalogPermission(DjangoModelPermissions):
    """Reads need a login unless ``CATALOG_PUBLIC_READ`` opens them; writes need model permissions.

    Anonymous writes answer 401 (the client should authenticate); authenticated users without
    the add/change/delete permission answer 403.
    """

    def has_permission(self, request, view):
        user = request.user
        if not hasattr(view, request.method.lower()):
            return True  # a method the view does not have (TRACE, PROPFIND): the view answers 405
        if request.method in SAFE_METHODS:
            return bool(settings.CATALOG_PUBLIC_READ or (user and user.is_authenticated))
        return super().has_permission(request, view)


class OwnedEntryPermission(BasePermission):
    """Plans and workloads: any signed-in user may read what is visible to them and create their
    own; only the owner (or staff, and only staff for ownerless presets) may change or delete."""

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated)

    def has_object_permission(self, request, view, obj):
        if request.method in SAFE_METHODS:
            return True  # the queryset already hides what the user may not see
        if obj.owner_id is None:
            return request.user.is_staff
        return obj.owner_id == request.user.id or request.user.is_staff


class PriceBookPermission(CatalogPermission):
    """Price books: reads as the catalogue; any signed-in user may create a book of their own and
    change or delete it; changing a shared book (no owner), its quotes included, needs the
    catalogue's change permission and deleting it the delete permission."""

    def has_permission(self, request, view):
        if request.method in SAFE_METHODS:
            return super().has_permission(request, view)
        return bool(request.user and request.user.is_authenticated)

    def has_object_permission(self, request, view, obj):
        if request.method in SAFE_METHODS or obj.owner_id == request.user.id:
            return True
        needed = "planner.delete_pricebook" if request.method == "DELETE" else "planner.change_pricebook"
        return obj.owner_id is None and request.user.has_perm(needed)
