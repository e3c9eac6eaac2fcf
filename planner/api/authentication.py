"""Token authentication for scripts, backed by :class:`planner.models.AccessToken`."""
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from planner.models import AccessToken
from planner.models.tokens import token_key_digest


class AccessTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>``, matched by the key's digest; records when each token was last
    used (at most once a minute)."""

    def authenticate_credentials(self, key):
        try:
            token = AccessToken.objects.select_related("user").get(key_digest=token_key_digest(key))
        except AccessToken.DoesNotExist:
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            AccessToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token
