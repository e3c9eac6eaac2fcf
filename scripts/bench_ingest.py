"""Benchmark: a node's kernel log ingested by the task path (read in blocks with its progress
recorded, applied in one transaction), for logs of 10,000 to 100,000 lines with a fault every
five lines. Uses DATABASE_URL when set, else the embedded SQLite file:
  .venv/bin/python scripts/bench_ingest.py
"""
import time
from datetime import datetime, timezone

from benchsetup import bench_user

BOOT = datetime(2026, 11, 30, tzinfo=timezone.utc)
XIDS = (13, 31, 43, 79)


def dmesg(bus: str, faults: int) -> str:
    """``faults`` Xid faults 40 s apart, each after four lines of other kernel messages."""
    lines = []
    for i in range(faults):
        lines += [f"[{10.0 + 40 * i:.6f}] EXT4-fs (nvme0n1p2): re-mounted."] * 4
        lines.append(f"[{12.0 + 40 * i:.6f}] NVRM: Xid (PCI:0000:{bus}): {XIDS[i % 4]}, pid=1, name=python3, Ch 10")
    return "\n".join(lines)


def main() -> None:
    user = bench_user()
    from planner.models import ClusterPlan
    from twin.services import ingestion, log_ingests
    from twin.services.creation import twin_create

    plan = ClusterPlan.objects.get(slug="ff2-pcie-2zone")
    for lines in (10_000, 50_000, 100_000):
        twin = twin_create(owner=user, plan=plan)
        text = dmesg(twin.pci_bus_ids[0][5:12], lines // 5)
        upload = ingestion.kernel_log_upload(twin=twin, node=1, text=text, boot_time=BOOT)
        ingest = log_ingests.log_ingest_create(twin=twin, upload=upload, text=text, boot_time=BOOT, year=None,
                                               timezone_name="UTC")
        start = time.perf_counter()
        log_ingests.log_ingest_run(ingest_id=ingest.pk)
        elapsed = time.perf_counter() - start
        ingest.refresh_from_db()
        print(f"{lines:7,} lines, {ingest.result['faults']:6,} faults: {elapsed:6.2f} s "
              f"({elapsed / lines * 1e6:5.1f} us a line), {ingest.status}")
        twin.delete()


if __name__ == "__main__":
    main()
