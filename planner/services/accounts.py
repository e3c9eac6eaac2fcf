"""Account services."""
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from planner.models import AccessToken
from planner.services.catalog import TABLES


def demo_user_ensure(*, username: str, password: str):
    """A staff user who may edit the catalogue, with an API token; created or reset."""
    user, _ = get_user_model().objects.get_or_create(username=username)
    user.set_password(password)
    user.is_staff = True
    user.save()
    models_ = [table.model for table in TABLES]
    codenames = [
        f"{action}_{model._meta.model_name}" for model in models_ for action in ("add", "change", "delete")
    ]
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames, content_type__app_label="planner"))
    return user, token_for(user)


def token_for(user, *, name: str = "default", read_only: bool = False) -> AccessToken:
    """The user's token of this name, created on first use."""
    token, _ = AccessToken.objects.get_or_create(user=user, name=name, defaults={"read_only": read_only})
    return token
