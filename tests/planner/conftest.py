"""Fixtures the planner's API tests share."""
import pytest

from planner.models import ClusterPlan


@pytest.fixture
def my_plan(catalog, user):
    """A private copy of the DGX-A100 preset owned by the reader."""
    plan = ClusterPlan.objects.get(slug="dgx-a100-3layer")
    plan.pk, plan.slug, plan.owner, plan.visibility, plan.node_count = None, "my-dgx", user, "private", 32
    plan.save()
    return plan
