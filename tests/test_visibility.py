"""One visibility rule for every owned model (``VisibleQuerySet.visible_to``), and no module
reaching into a view module for it."""
import ast
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from planner.models import ClusterPlan, Sweep, Visibility
from twin.models import Twin

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.django_db
def test_each_model_shows_own_shared_and_presets_as_its_fields_allow(catalog, user):
    other = get_user_model().objects.create_user("someone", password="pw-someone-1234")
    staff = get_user_model().objects.create_user("boss", password="pw-boss-1234", is_staff=True)
    preset = ClusterPlan.objects.get(slug="ff2-pcie-2zone")
    mine = ClusterPlan.objects.create(**{**_plan_fields(preset), "slug": "mine", "owner": user})
    shared = ClusterPlan.objects.create(**{**_plan_fields(preset), "slug": "theirs-shared", "owner": other,
                                           "visibility": Visibility.SHARED})
    private = ClusterPlan.objects.create(**{**_plan_fields(preset), "slug": "theirs-private", "owner": other})
    visible = set(ClusterPlan.objects.visible_to(user).values_list("slug", flat=True))
    assert {preset.slug, mine.slug, shared.slug} <= visible and private.slug not in visible
    assert private.slug in set(ClusterPlan.objects.visible_to(staff).values_list("slug", flat=True))
    twin = dict(plan=preset, name="t", node_count=1, gpus_per_node=8, jobs=[], pci_bus_ids=[], state=b"")
    Twin.objects.create(owner=other, visibility=Visibility.SHARED, **twin)
    Twin.objects.create(owner=other, **twin)
    assert Twin.objects.visible_to(user).count() == 1 and Twin.objects.visible_to(staff).count() == 2
    Sweep.objects.create(owner=other, name="s", plan=preset, spec={}, base_document={}, total_points=1, chunk_size=1,
                         chunk_count=1, engine_version="x", input_hash="x")
    assert Sweep.objects.visible_to(user).count() == 0 and Sweep.objects.visible_to(other).count() == 1
    from django.contrib.auth.models import AnonymousUser

    assert ClusterPlan.objects.visible_to(AnonymousUser()).count() == 0


def _plan_fields(plan):
    skip = {"id", "slug", "owner", "visibility", "created_at", "updated_at"}
    return {f.attname: getattr(plan, f.attname) for f in plan._meta.concrete_fields if f.name not in skip}


def test_nothing_imports_visibility_from_a_view_module():
    offenders = []
    for path in ROOT.glob("*/**/*.py"):
        if ".venv" in path.parts or "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and "views" in node.module.split("."):
                if any(alias.name.startswith("visible") for alias in node.names):
                    offenders.append(f"{path.relative_to(ROOT)}: from {node.module} import ...")
    assert offenders == []


def test_a_slug_held_by_a_private_plan_reads_as_taken_like_any_other(catalog, django_user_model):
    """Slugs are global names: a stranger's private plan's slug answers exactly as a preset's does,
    so a refused slug tells only that it is taken."""
    from rest_framework.test import APIClient

    from planner.models import ClusterPlan

    owner = django_user_model.objects.create_user("private-owner", password="pw-private-owner-1234")
    stranger = django_user_model.objects.create_user("stranger", password="pw-stranger-1234")
    preset = ClusterPlan.objects.get(slug="ff2-pcie-2zone")
    ClusterPlan.objects.create(**{**_plan_fields(preset), "slug": "secret-build", "owner": owner})
    client = APIClient()
    client.force_authenticate(stranger)
    answers = {}
    for slug in ("secret-build", "ff2-pcie-3layer"):
        clone = client.post("/api/plans/ff2-pcie-2zone/clone/", {"slug": slug}, format="json")
        create = client.post("/api/plans/", {**client.get("/api/plans/ff2-pcie-2zone/").json(), "slug": slug},
                             format="json")
        answers[slug] = (clone.status_code, clone.json()["errors"], create.status_code, create.json()["errors"])
    assert answers["secret-build"] == answers["ff2-pcie-3layer"]
    assert answers["secret-build"][1] == {"slug": ["is taken: slugs name plans across every user, so choose another"]}
