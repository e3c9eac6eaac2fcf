"""Account services."""
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from planner.models import AccessToken
from planner.models.tokens import token_key_digest
from planner.services.catalog import TABLES


def demo_user_ensure(*, username: str, password: str | None = None):
    """A demo user who may edit the catalogue (not staff), with an API token key.

    On first creation the password is ``password`` or a random one, written with the token's key to
    ``var/demo-credentials.txt`` (mode 600) so that later runs can print them again (the database
    keeps only the key's digest); an existing user's password is never reset unless ``password`` is
    given, and the key is reissued only when the file no longer holds a working one.
    """
    credentials = settings.VAR_DIR / "demo-credentials.txt"
    user, created = get_user_model().objects.get_or_create(username=username)
    if created or password:
        password = password or secrets.token_urlsafe(12)
        user.set_password(password)
        user.save()
    saved = credentials.read_text().split("\n") if credentials.exists() else []
    mine = saved[:1] == [username]  # the file holds this user's password (and key)
    password = password or (saved[1] if mine else None)
    key = saved[2] if mine and len(saved) > 2 else ""
    if not AccessToken.objects.filter(user=user, name="default", key_digest=token_key_digest(key)).exists():
        key = token_issue(user)
    if password:
        credentials.write_text(f"{username}\n{password}\n{key}\n")
        credentials.chmod(0o600)
    codenames = [f"{action}_{table.model._meta.model_name}" for table in TABLES if not table.preset
                 for action in ("add", "change", "delete")]
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames, content_type__app_label="planner"))
    return user, password, key


def token_issue(user, *, name: str = "default", read_only: bool = False) -> str:
    """A new key for the user's token of this name: the token is created on first use, and its key
    replaced on every later one (the previous key stops working). Only the digest is stored."""
    token, created = AccessToken.objects.get_or_create(user=user, name=name, defaults={"read_only": read_only})
    return token.key if created else token.rotate()
