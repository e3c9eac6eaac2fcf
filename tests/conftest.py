import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """Load the seed catalogue once into the test database, as ``manage.py load_catalog`` does.

    Each test runs in a transaction that is rolled back, so tests see the seed as loaded."""
    from django.db import connection

    from planner.services.catalog import catalog_load

    with django_db_blocker.unblock():
        catalog_load()
        # Transactional tests flush the database; serialized_rollback restores this snapshot.
        connection._test_serialized_contents = connection.creation.serialize_db_to_string()


@pytest.fixture
def eager_celery():
    """Run Celery tasks in the calling process, as the embedded default does."""
    from config.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield app
    app.conf.task_always_eager = previous


@pytest.fixture
def catalog(db):
    """Marks a test as reading the seed catalogue (loaded once per session)."""


@pytest.fixture
def user(db):
    return get_user_model().objects.create_user("reader", password="pw-reader-1234")


@pytest.fixture
def editor(db):
    """A user holding add/change/delete permissions on every catalogue table."""
    editor = get_user_model().objects.create_user("editor", password="pw-editor-1234")
    editor.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="planner").exclude(codename__startswith="view")
    )
    return editor


@pytest.fixture
def anon_client():
    return APIClient()


@pytest.fixture
def reader_client(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def editor_client(editor):
    client = APIClient()
    client.force_authenticate(editor)
    return client


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Tests create many users; a deliberately slow password hash costs them seconds for nothing.
    (The live-stack tests run the real settings in their own processes.)"""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def fresh_throttles():
    """Request throttles count in the cache; every test starts with none spent."""
    from django.core.cache import cache

    cache.clear()
