"""API tokens for scripts. A read-only token authenticates reads and is refused for writes.

Only a SHA-256 digest of each key is stored, with its first characters to tell tokens apart: the
key itself exists only on the instance that issued it, shown once. Keys are 160 random bits, so an
unsalted digest is as hard to invert as the key is to guess (the scheme GitHub and PyPI use).
"""
import hashlib
import secrets

from django.conf import settings
from django.db import models

KEY_PREFIX_CHARS = 8


def new_token_key() -> str:
    return secrets.token_hex(20)


def token_key_digest(key: str) -> str:
    """The stored form of a key: its SHA-256 digest in hex."""
    return hashlib.sha256(key.encode()).hexdigest()


class AccessToken(models.Model):
    key_digest = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=KEY_PREFIX_CHARS, editable=False,
                              help_text="The key's first characters, to tell tokens apart.")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="access_tokens")
    name = models.CharField(max_length=100, default="default")
    read_only = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    # The plain key of a token issued or rotated by this instance; never stored.
    key: str | None = None

    class Meta:
        ordering = ["created_at"]
        constraints = [models.UniqueConstraint(fields=["user", "name"], name="unique_token_name_per_user")]

    def __str__(self):
        return f"{self.user} / {self.name} ({self.prefix}…){' read-only' if self.read_only else ''}"

    def save(self, *args, **kwargs):
        if not self.key_digest:
            self._set_new_key()
        super().save(*args, **kwargs)

    def rotate(self) -> str:
        """Replace the key (the old one stops working) and return the new one."""
        self._set_new_key()
        self.save(update_fields=["key_digest", "prefix"])
        return self.key

    def _set_new_key(self):
        self.key = new_token_key()
        self.key_digest = token_key_digest(self.key)
        self.prefix = self.key[:KEY_PREFIX_CHARS]
