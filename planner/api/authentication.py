"""Token authentication for scripts, backed by :class:`planner.models.AccessToken`."""
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication, get_authorization_header

from planner.models import AccessToken
from planner.models.tokens import token_key_digest


class AccessTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>`` or ``Authorization: Bearer <key>`` (what OpenAPI clients send
    for a bearer scheme), matched by the key's digest; records when each token was last used (at
    most once a minute)."""

    KEYWORDS = (b"token", b"bearer")

    def authenticate(self, request):
        words = get_authorization_header(request).split()
        if not words or words[0].lower() not in self.KEYWORDS:
            return None
        if len(words) != 2:
            raise exceptions.AuthenticationFailed("Invalid token header: give the scheme and the key, one space apart.")
        try:
            key = words[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed("Invalid token header: the key is not text.") from None
        return self.authenticate_credentials(key)

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
