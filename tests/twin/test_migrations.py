"""The twin migration keeps a twin made before fabric parts and profiles were stored working as
its plan describes: the plan's fabric counted, its per-node profile kept, no node exclusion."""
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE, AFTER = [("twin", "0001_initial")], [("twin", "0002_fabric_and_profiles")]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_existing_twins_get_their_plans_fabric_and_keep_their_profile(catalog):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    plan = old.get_model("planner", "ClusterPlan").objects.get(slug="ff2-pcie-2zone")
    owner = old.get_model("auth", "User").objects.create(username="legacy")
    Twin = old.get_model("twin", "Twin")
    fields = dict(owner=owner, plan=plan, name="t", node_count=plan.node_count, gpus_per_node=8, jobs=[],
                  pci_bus_ids=[], state=b"")
    fire_flyer = Twin.objects.create(**fields).pk
    per_node = Twin.objects.create(**fields, failures_per_1000_node_days=6.5).pk
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps.get_model("twin", "Twin")
    first, second = new.objects.get(pk=fire_flyer), new.objects.get(pk=per_node)
    assert first.fabric == {"nics_per_node": 1, "links": 3200, "leaves": 80, "switches": 122}
    assert (first.failure_profile, second.failure_profile) == ("fire-flyer", "per-node-rate")
    assert first.exclude_after == second.exclude_after == 0
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
