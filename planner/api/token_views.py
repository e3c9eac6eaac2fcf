"""API tokens: your named tokens for scripts, and a key for a username and password."""
from django.contrib.auth import authenticate, get_user_model, user_logged_in
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.parsers import FormParser
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from planner import serializers as api
from planner.api import bodies
from planner.api.parsers import BoundedJSONParser
from planner.api.permissions import TokenScopePermission
from planner.models import AccessToken
from planner.services.accounts import token_issue


class TokenViewSet(mixins.ListModelMixin, mixins.CreateModelMixin, mixins.DestroyModelMixin,
                   viewsets.GenericViewSet):
    """Your API tokens: create full or read-only tokens for scripts, list them, revoke them."""

    serializer_class = api.AccessTokenSerializer
    permission_classes = [TokenScopePermission, IsAuthenticated]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return AccessToken.objects.none()
        return AccessToken.objects.filter(user=self.request.user)

    def perform_create(self, serializer):
        serializer.save(user=self.request.user)

    def get_serializer_class(self):
        return api.ListedAccessTokenSerializer if self.action == "list" else api.AccessTokenSerializer


LOGIN_TOKEN_NAME = "password login"


class ObtainTokenSerializer(serializers.Serializer):
    # No account has a longer name, and the lockout's record of a failure holds no longer one.
    username = serializers.CharField(max_length=get_user_model()._meta.get_field("username").max_length)
    password = serializers.CharField(style={"input_type": "password"}, trim_whitespace=False)
    name = serializers.CharField(required=False, default=LOGIN_TOKEN_NAME, max_length=100,
                                 help_text="the token to issue a new key for (created if you have none of that "
                                           "name); your other tokens, the one bin/run printed among them, keep "
                                           "working")


class ObtainTokenView(APIView):
    """Exchange a username and password for a new key of one named (full-access) API token, by
    default "password login".

    Only the key's digest is stored, so each call issues a new key for that name and its previous key
    stops working; tokens of other names (the demo user's "default", each script's own) are left as
    they are. Revoke any one at ``DELETE /api/tokens/{id}/``."""

    permission_classes = [AllowAny]
    authentication_classes = []
    parser_classes = [BoundedJSONParser, FormParser]  # JSON, or a form from curl -d
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "login"

    @extend_schema(tags=["tokens"], request={"application/json": ObtainTokenSerializer},
                   description="JSON as declared; a urlencoded form (`curl -d`) with the same fields is also "
                               "read. The schema declares one body per operation: openapi-python-client 0.29.1 "
                               "generates code that cannot import for an operation declaring two (its issue "
                               "1451).",
                   responses={200: bodies.TokenIssuedSerializer, 400: OpenApiResponse(description="wrong credentials"),
                              429: OpenApiResponse(description="too many failed logins: locked out")})
    def post(self, request):
        body = ObtainTokenSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        # The Django request, on which the lockout check (django-axes) marks a locked-out login.
        user = authenticate(request._request, username=body.validated_data["username"],
                            password=body.validated_data["password"])
        if user is None or not user.is_active:
            raise serializers.ValidationError({"non_field_errors": ["unable to log in with those credentials"]})
        # A login like any other: it clears its own pair's failures (django-axes) and sets last_login.
        user_logged_in.send(sender=user.__class__, request=request._request, user=user)
        name = body.validated_data["name"]
        if user.access_tokens.filter(name=name, read_only=True).exists():
            raise serializers.ValidationError({"name": [f"your token '{name}' is read-only; this call issues "
                                                        "full-access keys: name another token"]})
        return Response({"token": token_issue(user, name=name)})
