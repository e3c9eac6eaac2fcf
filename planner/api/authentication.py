"""Token authentication for scripts, backed by :class:`planner.models.AccessToken`."""
from django.utils import timezone
from rest_framework.authentication import TokenAuthentication

from planner.models import AccessToken


class AccessTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>``; records when each token was last used (at most once a minute)."""

    model = AccessToken

    def authenticate_credentials(self, key):
        user, token = super().authenticate_credentials(key)
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            AccessToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return user, token
