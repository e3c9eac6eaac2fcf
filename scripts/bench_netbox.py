"""Benchmark: the NetBox import files of every preset plan, with their sizes and the time to build
them (the rack layout's evaluation, wiring, rows and the ZIP archive), through the service the API
serves them from. Uses
DATABASE_URL when set, else the embedded SQLite file:
  .venv/bin/python scripts/bench_netbox.py
"""
import time

from benchsetup import bench_user


def main() -> None:
    bench_user()
    from planner.models import ClusterPlan
    from planner.services import netbox

    for plan in ClusterPlan.objects.filter(owner__isnull=True).order_by("slug"):
        parts = [plan.node_type, plan.switch, plan.storage_node_type]
        # A part the catalogue has no rack height for gets 1 U here: the figures time the export, not its heights.
        heights = {part.slug: 1 for part in parts if part is not None and not part.rack_units}
        start = time.perf_counter()
        files = netbox.plan_netbox(plan=plan, u_heights=heights)
        archive = netbox.netbox_zip(files, plan.slug)
        elapsed = time.perf_counter() - start
        counts = {name: len(files[name]) - 1 for name in ("racks", "devices", "cables", "inventory-items")}
        print(f"{plan.slug:28s} {counts['racks']:6,} racks {counts['devices']:7,} devices {counts['cables']:8,} "
              f"cables {counts['inventory-items']:8,} modules {elapsed * 1000:7.0f} ms  "
              f"ZIP {len(archive) / 1e6:5.2f} MB")


if __name__ == "__main__":
    main()
