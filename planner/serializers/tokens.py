"""Access tokens: as listed (never the key) and as created (the key, once)."""
from rest_framework import serializers

from planner.models import AccessToken
from planner.serializers.base import ModelSerializer


class ListedAccessTokenSerializer(ModelSerializer):
    """A token as listed: never its key, only the key's first characters."""

    class Meta:
        model = AccessToken
        fields = ["id", "name", "prefix", "read_only", "created_at", "last_used_at"]
        read_only_fields = fields


class AccessTokenSerializer(ModelSerializer):
    key = serializers.CharField(read_only=True, help_text="Shown once, when the token is created.")

    class Meta:
        model = AccessToken
        fields = ["id", "name", "prefix", "read_only", "key", "created_at", "last_used_at"]
        read_only_fields = ["prefix", "created_at", "last_used_at"]
        extra_kwargs = {"name": {"required": True}}

    def validate_name(self, name):
        if name == "default":
            raise serializers.ValidationError(
                "'default' is the full-access token manage.py ensure_demo_user (bin/run) issues")
        user = self.context["request"].user
        if AccessToken.objects.filter(user=user, name=name).exists():
            raise serializers.ValidationError(f"you already have a token named '{name}'")
        return name
