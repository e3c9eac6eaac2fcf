"""Who may see an owned entry: the one visibility rule every owned model (plans, workloads, sweeps,
twins, price books) shares."""
from django.db import models

from planner.services.errors import InputError


class Visibility(models.TextChoices):
    PRIVATE = "private", "Only the owner"
    SHARED = "shared", "Every signed-in user"


class VisibleQuerySet(models.QuerySet):
    """The one visibility rule, for every owned model: anonymous users see nothing, staff see
    everything, others their own, what is shared (models with ``visibility``) and presets (models
    whose owner may be empty)."""

    def visible_to(self, user):
        if not user.is_authenticated:
            return self.none()
        if user.is_staff:
            return self
        fields = {field.name: field for field in self.model._meta.get_fields()}
        rule = models.Q(owner=user)
        if "visibility" in fields:
            rule |= models.Q(visibility=Visibility.SHARED)
        if fields["owner"].null:
            rule |= models.Q(owner__isnull=True)
        return self.filter(rule)

    def visible_slug(self, user, slug: str, *, field: str):
        """The entry ``slug`` if ``user`` may see it, else an input error naming ``field``."""
        entry = self.visible_to(user).filter(slug=slug).first()
        if entry is None:
            raise InputError({field: [f"no {field} '{slug}' is visible to you"]})
        return entry
