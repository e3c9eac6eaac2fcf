"""Kernel logs as dmesg, dmesg -T and journald write them: each Xid at its logged time, the Xids of
one fault as one event, and the current Xid catalogue known."""
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from tests.twin.test_twin_api import create, no_background_driver, owner_client  # noqa: F401  (fixtures)
from twin import kernel_log
from twin.models import TwinEvent

LINE = "NVRM: Xid (PCI:0000:{bus}): {xid}, pid=4242, name=python3, {text}"
BOOT = datetime(2026, 11, 30, 8, 0, tzinfo=timezone.utc)


def _line(xid, bus="07:00", text="Ch 00000010"):
    return LINE.format(bus=bus, xid=xid, text=text)


@pytest.mark.parametrize("stamped, kwargs, expected", [
    (f"[ 3600.250000] {_line(79)}", {"boot_time": BOOT}, datetime(2026, 11, 30, 9, 0, 0, 250000, timezone.utc)),
    (f"[Mon Nov 30 10:42:07 2026] {_line(79)}", {}, datetime(2026, 11, 30, 10, 42, 7, tzinfo=timezone.utc)),
    (f"[Mon Nov 30 10:42:07 2026] {_line(79)}", {"zone": ZoneInfo("Asia/Shanghai")},
     datetime(2026, 11, 30, 2, 42, 7, tzinfo=timezone.utc)),
    (f"Nov 30 10:42:07 gpu-node-07 kernel: {_line(79)}", {"year": 2026},
     datetime(2026, 11, 30, 10, 42, 7, tzinfo=timezone.utc)),
    (f"2026-11-30T10:42:07+0100 gpu-node-07 kernel: {_line(79)}", {},
     datetime(2026, 11, 30, 9, 42, 7, tzinfo=timezone.utc)),
    # journalctl -k -o short-precise, short-iso-precise, short-full (UTC, an offset, an abbreviation read
    # in the upload's zone), short-monotonic and short-unix; dmesg -x and dmesg -T -x.
    (f"Nov 30 10:42:07.250000 gpu-node-07 kernel: {_line(79)}", {"year": 2026},
     datetime(2026, 11, 30, 10, 42, 7, 250000, timezone.utc)),
    (f"2026-11-30T10:42:07.250000+0000 gpu-node-07 kernel: {_line(79)}", {},
     datetime(2026, 11, 30, 10, 42, 7, 250000, timezone.utc)),
    (f"Mon 2026-11-30 10:42:07 UTC gpu-node-07 kernel: {_line(79)}", {"zone": ZoneInfo("Asia/Shanghai")},
     datetime(2026, 11, 30, 10, 42, 7, tzinfo=timezone.utc)),
    (f"Mon 2026-11-30 10:42:07 +0100 gpu-node-07 kernel: {_line(79)}", {},
     datetime(2026, 11, 30, 9, 42, 7, tzinfo=timezone.utc)),
    (f"Mon 2026-11-30 10:42:07 CET gpu-node-07 kernel: {_line(79)}", {"zone": ZoneInfo("Europe/Berlin")},
     datetime(2026, 11, 30, 9, 42, 7, tzinfo=timezone.utc)),
    (f"[ 3600.250000] gpu-node-07 kernel: {_line(79)}", {"boot_time": BOOT},
     datetime(2026, 11, 30, 9, 0, 0, 250000, timezone.utc)),
    (f"1796035327.250000 gpu-node-07 kernel: {_line(79)}", {},
     datetime(2026, 11, 30, 10, 42, 7, 250000, timezone.utc)),
    (f"kern  :warn  : [ 3600.250000] {_line(79)}", {"boot_time": BOOT},
     datetime(2026, 11, 30, 9, 0, 0, 250000, timezone.utc)),
    (f"kern  :err   : [Mon Nov 30 10:42:07 2026] {_line(79)}", {},
     datetime(2026, 11, 30, 10, 42, 7, tzinfo=timezone.utc)),
])
def test_each_layout_keeps_its_time(stamped, kwargs, expected):
    (line,), unread = kernel_log.xid_lines(stamped, **kwargs)
    assert (line.xid, line.logged_at, unread) == (79, expected, [])


def test_an_xid_line_whose_time_does_not_read_is_listed_not_applied():
    """A layout this does not read (dmesg -t, which prints no time; an unknown one) is listed with
    its line and the layouts read, never applied without a time (which nothing could place or
    recognise when the log is sent again)."""
    found, unread = kernel_log.xid_lines(f"{_line(79)}\n12/01/2026 10:42:07 {_line(48)}")
    assert found == [] and [entry["line"] for entry in unread] == [1, 2]
    assert unread[0]["reason"].startswith("its time is in no layout this reads (dmesg, dmesg -T and dmesg -x; "
                                          "journalctl -k -o short, short-precise, short-full")


@pytest.mark.parametrize("stamped, field", [(f"[ 3600.25] {_line(79)}", "boot_time"),
                                            (f"Nov 30 10:42:07 host kernel: {_line(79)}", "year")])
def test_a_time_that_needs_an_input_names_it(stamped, field):
    with pytest.raises(kernel_log.LogTimeError) as refused:
        kernel_log.xid_lines(stamped)
    assert refused.value.field == field


def _bursts(*entries):
    text = "\n".join(f"[{seconds:12.6f}] {_line(xid, bus, text)}" for seconds, xid, bus, text in entries)
    return kernel_log.bursts(kernel_log.xid_lines(text, boot_time=BOOT)[0])


def test_the_xids_of_one_fault_are_one_burst_taking_its_hardest_repair():
    # An application fault: Xid 13 twice and the channel's 43 on one GPU; a page fault on another GPU
    # is that GPU's own fault.
    app = _bursts((100.0, 13, "07:00", "Graphics Exception"), (100.1, 13, "07:00", "ESR 0x504648"),
                  (100.2, 43, "07:00", "Ch 00000010"), (101.0, 31, "0f:00", "MMU Fault"))
    assert [(len(b.lines), b.category, b.primary.bus) for b in app] == [(3, "xid-13", "0000:07:00"),
                                                                        (1, "xid-31", "0000:0f:00")]
    # A double-bit ECC error with its cleanup (45) and the driver's recovery guidance (154).
    ecc = _bursts((500.0, 48, "07:00", "DBE"), (500.5, 45, "07:00", "Ch 00000008"),
                  (501.0, 154, "07:00", "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"))
    assert [(b.category, b.primary.xid) for b in ecc] == [("xid-48", 48)]
    # A page fault whose 154 asks for a GPU reset: raised from a job restart to a reset.
    raised = _bursts((900.0, 31, "07:00", "MMU Fault"),
                     (900.2, 154, "07:00", "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"))
    assert [b.category for b in raised] == ["xid-95"]


def test_each_gpus_fault_is_its_own_and_sympathetic_xids_follow_the_hardest():
    """A job's Xid 13 on one GPU beside a double-bit error on another within the window: two faults,
    each on the GPU its line names; the cleanup (45) on a third GPU follows the hardest, the 48."""
    found = _bursts((10.0, 13, "07:00", "Graphics Exception"), (10.2, 48, "0f:00", "DBE"),
                    (10.4, 45, "47:00", "Ch 00000008"), (10.6, 45, "0f:00", "Ch 00000009"))
    assert [(b.category, b.primary.bus, sorted(line.xid for line in b.lines)) for b in found] == [
        ("xid-13", "0000:07:00", [13]), ("xid-48", "0000:0f:00", [45, 45, 48])]


def test_faults_apart_in_time_or_alone_stay_apart_and_needless_ones_do_nothing():
    apart = _bursts((100.0, 13, "07:00", "x"), (100.0 + kernel_log.BURST_WINDOW_S + 1, 13, "07:00", "x"))
    assert len(apart) == 2
    (solo_nvlink,) = _bursts((10.0, 149, "07:00", "NETIR link down"))  # Blackwell NVLink5: NVLink's category
    assert solo_nvlink.category == "xid-74"
    (sympathetic,) = _bursts((10.0, 79, "07:00", "fallen off the bus"), (10.5, 74, "0f:00", "link down"))
    assert sympathetic.category == "xid-79" and sympathetic.primary.xid == 79  # the peer's 74 is the by-product
    (ignored,) = _bursts((10.0, 92, "07:00", "High single-bit ECC error rate"))
    assert (ignored.category, ignored.primary) == ("", None)


def test_a_logged_burst_is_one_interruption_at_its_logged_time(catalog, owner_client):  # noqa: F811
    twin = create(owner_client)
    buses = [bus[5:12] for bus in twin.pci_bus_ids]
    log = "\n".join([
        f"[Mon Nov 30 10:42:07 2026] {_line(13, buses[0], 'Graphics Exception')}",
        f"[Mon Nov 30 10:42:07 2026] {_line(13, buses[0], 'ESR 0x504648')}",
        f"[Mon Nov 30 10:42:08 2026] {_line(43, buses[0], 'Ch 00000010')}",
        f"[Mon Nov 30 10:42:09 2026] {_line(31, buses[1], 'MMU Fault')}",
        "[Mon Nov 30 10:50:00 2026] EXT4-fs (nvme0n1p2): re-mounted.",
        f"[Mon Nov 30 11:00:00 2026] {_line(92, buses[2], 'High single-bit ECC error rate')}",
        f"[Mon Nov 30 12:00:00 2026] {_line(149, buses[3], 'NETIR link down')}",
    ])
    before = TwinEvent.objects.filter(twin=twin, kind="ingested").count()
    response = owner_client.post(f"/api/twins/{twin.pk}/ingest-log/", {"node": 2, "log": log}, format="json")
    assert response.status_code == 201, response.json()
    report = response.json()
    assert (report["xid_lines"], report["applied"], report["faults"], report["noted"]) == (6, 6, 4, 1)
    ingested = [e for e in report["events"] if e["kind"] == "ingested"]
    # The job's own faults (13, 31) concern the job, not a GPU: each its own event, its message naming
    # the GPU's bus; the NVLink fault is on the GPU its line names (node 2's fourth: GPU 19).
    assert [(e["category"], e["gpu"], e["logged_at"]) for e in ingested] == [
        ("xid-13", None, "2026-11-30T10:42:07+00:00"), ("xid-31", None, "2026-11-30T10:42:09+00:00"),
        ("xid-74", 19, "2026-11-30T12:00:00+00:00")]
    assert buses[0] in ingested[0]["message"] and buses[1] in ingested[1]["message"]
    assert "Xid 43 (GPU stopped processing)" in ingested[0]["message"]
    assert TwinEvent.objects.filter(twin=twin, kind="ingested").count() - before == 3
    stored = TwinEvent.objects.filter(twin=twin, kind="ingested").order_by("seq").last()
    assert stored.logged_at == datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
    zoneless = owner_client.post(f"/api/twins/{twin.pk}/ingest-log/", {"node": 2, "log": log, "timezone": "Mars/Base"},
                                 format="json")
    assert zoneless.status_code == 400 and "IANA" in zoneless.json()["timezone"][0]


@pytest.mark.parametrize("stamp", [
    "Nov 30 10:42:{s:02d}.123456 gpu-node-07 kernel:",  # journalctl -k -o short-precise
    "Mon 2026-11-30 10:42:{s:02d} UTC gpu-node-07 kernel:",  # -o short-full
    "kern  :err   : [Mon Nov 30 10:42:{s:02d} 2026]",  # dmesg -T -x
])
def test_each_layout_is_read_with_its_times_and_sent_again_applies_nothing(catalog, owner_client, stamp):  # noqa: F811
    """Five faults a minute apart in journalctl's precise and full layouts and in dmesg -x: five
    ingested events at their logged times (these layouts once gave every time null, eleven faults for
    five, and applied them all again when sent again); sent again, all five are already ingested."""
    twin = create(owner_client)
    bus = twin.pci_bus_ids[0][5:12]
    log = "\n".join(f"{stamp.format(s=second)} {_line(79, bus, 'GPU has fallen off the bus')}".replace(
        "10:42:", f"10:{42 + minute}:") for minute in range(5) for second in (7, 8))
    url = f"/api/twins/{twin.pk}/ingest-log/"
    body = {"node": 1, "log": log, "year": 2026}
    first = owner_client.post(url, body, format="json").json()
    assert (first["xid_lines"], first["applied"], first["faults"], first["malformed"]) == (10, 10, 5, []), first
    assert [e["logged_at"][11:19] for e in first["events"] if e["kind"] == "ingested"] == [
        f"10:{42 + minute}:07" for minute in range(5)]
    again = owner_client.post(url, body, format="json").json()
    assert (again["faults"], again["already_ingested"]) == (5, 5)
    assert not [e for e in again["events"] if e["kind"] == "ingested"]


def test_a_10k_line_log_is_ingested_in_a_bounded_number_of_queries_and_one_at_a_time(
        catalog, owner_client, django_assert_max_num_queries):  # noqa: F811
    """10,000 faults (a line every 40 s, so no two merge) in one transaction: the events go in bulk,
    so the queries grow with hundreds of events, not with lines (133 on SQLite when measured; 1k
    lines took 25). While one log is being ingested into a twin, the next answers 409."""
    from django.core.cache import cache

    twin = create(owner_client)
    bus = twin.pci_bus_ids[0][5:12]
    log = "\n".join(f"[{10.0 + 40 * i:.6f}] {_line([13, 31, 43, 79][i % 4], bus)}" for i in range(10_000))
    body = {"node": 0, "log": log, "boot_time": "2026-11-30T00:00:00Z"}
    with django_assert_max_num_queries(250):
        response = owner_client.post(f"/api/twins/{twin.pk}/ingest-log/", body, format="json")
    assert response.status_code == 201 and response.json()["faults"] == 10_000
    assert TwinEvent.objects.filter(twin=twin, kind="ingested").count() == 10_000
    cache.add(f"twin-ingest:{twin.pk}", 1, timeout=60)  # an upload still being ingested
    busy = owner_client.post(f"/api/twins/{twin.pk}/ingest-log/", {"node": 0, "log": _line(79, bus),
                                                                    "boot_time": "2026-11-30T00:00:00Z"}, format="json")
    assert busy.status_code == 409 and "being ingested" in busy.json()["detail"]
    cache.delete(f"twin-ingest:{twin.pk}")


def test_a_line_whose_date_no_calendar_has_is_listed_not_a_server_error():
    lines = [f"2026-13-30T10:42:07+0100 gpu-node-07 kernel: {_line(79)}",
             f"Feb 30 10:42:07 gpu-node-07 kernel: {_line(79)}",
             f"[99999999999999.0] {_line(79)}",
             f"[Mon Nov 30 10:42:07 2026] {_line(79)}"]
    found, unread = kernel_log.read_lines(lines, first_number=1, boot_time=BOOT, year=2026, zone=timezone.utc)
    assert [entry["line"] for entry in unread] == [1, 2, 3]
    assert "month must be in 1..12" in unread[0]["reason"] and "day is out of range" in unread[1]["reason"]
    assert [line.number for line in found] == [4]


# A DGX H100's GPUs in nvidia-smi's order (the catalogue's dgx-h100 entry, its sources in its notes).
DGX_H100_BUSES = ["1b", "43", "52", "61", "9d", "c3", "d1", "df"]
# A day of one DGX H100's dmesg -T, written in the driver's own form: a hardware fault on each of its
# eight GPUs hours apart, a sympathetic cleanup (Xid 45) on a peer beside the first, and the kernel's
# other lines between them.
DGX_H100_DAY = [
    (0, "1b", 79, "GPU has fallen off the bus."), (0, "43", 45, "Ch 00000008, errorString CTX SWITCH TIMEOUT"),
    (3, "43", 48, "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
                  "partition 1, subpartition 0."),
    (6, "52", 94, "Contained: SM (0x1). RST: No, D-RST: No"),
    (9, "61", 119, "Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL)"),
    (12, "9d", 74, "NVLink: fatal error detected on link 7(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)"),
    (15, "c3", 64, "Row Remapper Error: failed to remap row, remapper is full"),
    (18, "d1", 62, "Internal micro-controller halt (SEC2 0x1)"),
    (21, "df", 95, "Uncontained: FBHUB. RST: Yes, D-RST: No"),
]


def test_a_day_of_dgx_h100_kernel_logs_puts_every_fault_on_the_gpu_its_line_names(catalog, owner_client):  # noqa: F811
    """A twin of a DGX H100 plan maps Xid lines by the DGX H100's GPU addresses (not the DGX A100's),
    so each of the day's eight faults lands on the GPU its line names, the peer's cleanup with none."""
    owner_client.post("/api/plans/llama3-h100-16k/clone/", {"slug": "h100-twin-plan"}, format="json")
    owner_client.patch("/api/plans/h100-twin-plan/", {"node_count": 16}, format="json")
    response = owner_client.post("/api/twins/", {"plan": "h100-twin-plan", "seed": 1}, format="json")
    assert response.status_code == 201, response.json()
    twin_id = response.json()["id"]
    assert response.json()["pci_bus_ids"] == [f"0000:{bus}:00.0" for bus in DGX_H100_BUSES]
    lines = []
    for hour, bus, xid, text in DGX_H100_DAY:
        stamp = f"[Mon Nov 30 {hour:02d}:17:{5 + 2 * (xid == 45):02d} 2026]"  # the cleanup 2 s after the fault
        lines += [f"{stamp} {LINE.format(bus=f'{bus}:00', xid=xid, text=text).replace('pid=4242', 'pid=91532')}",
                  f"{stamp} nvidia-nvswitch2: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 44 egress non-posted "
                  "PRIV error", f"{stamp} mlx5_core 0000:18:00.0: mlx5_fw_tracer_handle_traces:739: FW trace"]
    response = owner_client.post(f"/api/twins/{twin_id}/ingest-log/", {"node": 3, "log": "\n".join(lines)},
                                 format="json")
    assert response.status_code == 201, response.json()
    report = response.json()
    assert (report["xid_lines"], report["applied"], report["faults"], report["malformed"]) == (9, 9, 8, [])
    ingested = [e for e in report["events"] if e["kind"] == "ingested"]
    assert [e["gpu"] for e in ingested] == [3 * 8 + i for i in range(8)]  # node 3's GPUs 0 to 7, in order
    assert [e["category"] for e in ingested] == ["faulty-gpu", "gpu-hbm3", "gpu-hbm3", "gpu-system-processor",
                                                 "faulty-gpu", "gpu-hbm3", "gpu-system-processor", "gpu-hbm3"]
    assert "Xid 45" in ingested[0]["message"]  # the cleanup on 43:00 follows the fall off the bus on 1b:00
    # Nodes whose GPUs sit elsewhere: the owner sets the map, and a bad one is refused naming the field.
    url = f"/api/twins/{twin_id}/pci-bus-ids/"
    assert owner_client.post(url, {"pci_bus_ids": ["0000:18:00.0"] * 8}, format="json").json()["errors"] == {
        "pci_bus_ids": ["give 8 distinct PCI bus ids (dddd:bb:dd.f), one per GPU"]}
    hgx = [f"0000:{bus}:00" for bus in ("18", "2A", "3a", "5d", "9a", "ab", "ba", "db")]
    changed = owner_client.post(url, {"pci_bus_ids": hgx}, format="json")
    assert changed.status_code == 200 and changed.json()["pci_bus_ids"][1] == "0000:2a:00.0"
