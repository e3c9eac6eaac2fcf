"""Shared entries that others' work names: when a plan or workload stops being shared with a user
(its owner deletes it or makes it private), each of that user's objects that names it (a twin, a
sweep or site plan, a measured run) is given the user's own private copy of the entry as it stands, in its place.
Their work keeps running and reading as before, and the owner's delete or change goes through: the
others' objects no longer pin the owner's entry, nor show it once it is private. The owner's own
objects that name the entry still keep it (409)."""
import datetime

from django.db import models, transaction

from planner.models import ClusterPlan, Workload

COPY_SLUG_MAX = 100


def _free_slug(model, base: str) -> str:
    """``base``, or ``base-2``, ``base-3`` ...: the first slug of ``model`` nobody holds."""
    base = base[:COPY_SLUG_MAX - 4]
    slug, n = base, 1
    while model.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def _copy(entry, owner_id: int):
    """``owner_id``'s private copy of ``entry``, as it stands."""
    model = type(entry)
    copy = model.objects.get(pk=entry.pk)
    copy.pk = copy.id = None
    copy.slug = _free_slug(model, f"{entry.slug}-kept-{owner_id}")
    copy.name = f"{entry.name} (your copy: its owner stopped sharing it)"
    copy.owner_id, copy.visibility, copy.version = owner_id, "private", 1
    copy.description = (f"{entry.description}\n\n" if entry.description else "") + (
        f"Copied on {datetime.date.today().isoformat()} from '{entry.slug}', which its owner stopped sharing, "
        "for the work of yours that names it.")
    copy.full_clean()
    copy.save()
    return copy


@transaction.atomic
def hand_over_references(*, entry: ClusterPlan | Workload) -> dict[int, models.Model]:
    """Point every other user's object that names ``entry`` at that user's own copy of it (made
    here, one per user); returns {user id: their copy}. Run it inside the transaction that deletes
    the entry or makes it private, so that a refused delete undoes it."""
    copies = {}
    # Every foreign key to the entry, those declared without a reverse accessor (a run's plan) included.
    relations = (field for field in entry._meta.get_fields(include_hidden=True) if field.auto_created
                 and not field.concrete and field.one_to_many)
    for relation in relations:
        if "owner" not in {f.name for f in relation.related_model._meta.fields}:
            continue
        rows = relation.related_model._base_manager.filter(**{relation.field.name: entry})
        others = rows.exclude(owner_id=entry.owner_id) if entry.owner_id is not None else rows.filter(
            owner__isnull=False)
        for owner_id in sorted(set(others.values_list("owner_id", flat=True))):
            if owner_id not in copies:
                copies[owner_id] = _copy(entry, owner_id)
            others.filter(owner_id=owner_id).update(**{relation.field.name: copies[owner_id]})
    return copies
