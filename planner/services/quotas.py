"""Per-user quotas that hold under concurrency: the count and the insert it guards run in one transaction
on the owner's user row locked, so two requests of one user cannot both pass a count taken before
either inserted (PostgreSQL's SELECT ... FOR UPDATE; SQLite, the embedded default, runs one writer at a
time and ignores the lock)."""
from django.contrib.auth import get_user_model


def lock_owner(owner) -> None:
    """Hold ``owner``'s user row until the surrounding transaction ends (call inside ``transaction.atomic``)."""
    list(get_user_model().objects.select_for_update().filter(pk=owner.pk).values_list("pk", flat=True))
