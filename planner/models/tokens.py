"""API tokens for scripts. A read-only token authenticates reads and is refused for writes."""
import secrets

from django.conf import settings
from django.db import models


def new_token_key() -> str:
    return secrets.token_hex(20)


class AccessToken(models.Model):
    key = models.CharField(max_length=40, unique=True, default=new_token_key, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="access_tokens")
    name = models.CharField(max_length=100, default="default")
    read_only = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [models.UniqueConstraint(fields=["user", "name"], name="unique_token_name_per_user")]

    def __str__(self):
        return f"{self.user} / {self.name}{' (read-only)' if self.read_only else ''}"
