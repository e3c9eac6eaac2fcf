"""Account services."""
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from planner.models import AccessToken
from planner.services.catalog import TABLES


def demo_user_ensure(*, username: str, password: str | None = None):
    """A demo user who may edit the catalogue (not staff), with an API token.

    On first creation the password is ``password`` or a random one, written to
    ``var/demo-credentials.txt`` (mode 600) so that later runs can print it again; an existing
    user's password is never reset unless ``password`` is given.
    """
    credentials = settings.VAR_DIR / "demo-credentials.txt"
    user, created = get_user_model().objects.get_or_create(username=username)
    if created or password:
        password = password or secrets.token_urlsafe(12)
        user.set_password(password)
        user.save()
        credentials.write_text(f"{username}\n{password}\n")
        credentials.chmod(0o600)
    elif credentials.exists() and credentials.read_text().split("\n")[0] == username:
        password = credentials.read_text().split("\n")[1]
    codenames = [f"{action}_{table.model._meta.model_name}" for table in TABLES if not table.preset
                 for action in ("add", "change", "delete")]
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames, content_type__app_label="planner"))
    return user, password, token_for(user)


def token_for(user, *, name: str = "default", read_only: bool = False) -> AccessToken:
    """The user's token of this name, created on first use."""
    token, _ = AccessToken.objects.get_or_create(user=user, name=name, defaults={"read_only": read_only})
    return token
