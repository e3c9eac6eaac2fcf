"""Real events into a twin: an NVIDIA driver Xid line, an Xid code, a category, or a node's whole
kernel log, read with NVIDIA's Xid catalogue (:mod:`twin.kernel_log`)."""
import io
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone, tzinfo

from django.db import transaction

from simcore.formulas.reliability import fire_flyer_categories
from twin import kernel_log
from twin.models import Twin, TwinEvent
from twin.services.controls import twin_inject, twin_inject_all
from twin.services.creation import pci_bus, twin_categories
from twin.services.errors import TwinInputError
from twin.services.persistence import event_json

MAX_LOG_LINES = 100_000
READ_BLOCK_LINES = 10_000  # a large log's progress is reported after each block of lines


def parse_xid_line(twin: Twin, line: str) -> tuple[int, int]:
    """(local GPU index, Xid code) from an NVIDIA driver kernel-log line."""
    match = kernel_log.XID_LINE.search(line or "")
    if match is None:
        raise TwinInputError({"line": ["not an 'NVRM: Xid (PCI:dddd:bb:dd[.f]): <code>, ...' kernel-log line"]})
    return _local_gpu(twin, match["bus"], "line"), _known(int(match["xid"]), "line")


def _local_gpu(twin: Twin, bus: str, field: str) -> int:
    bus = pci_bus(bus)
    if bus not in twin.pci_bus_ids:
        raise TwinInputError({field: [f"PCI bus {bus} is not one of this twin's GPUs ({', '.join(twin.pci_bus_ids)})"]})
    return twin.pci_bus_ids.index(bus)


def _known(xid: int, field: str) -> int:
    if xid not in kernel_log.XID_CATALOGUE:
        raise TwinInputError({field: [f"Xid {xid} is not in NVIDIA's Xid catalogue as this planner reads it "
                                      f"(known: {', '.join(map(str, kernel_log.XID_CATALOGUE))})"]})
    return xid


def _node(twin: Twin, node) -> int:
    if isinstance(node, bool) or not isinstance(node, int) or not 0 <= node < twin.node_count:
        raise TwinInputError({"node": [f"the node the event came from (0-{twin.node_count - 1})"]})
    return node


def twin_ingest(*, twin: Twin, payload: dict) -> list[TwinEvent]:
    """A real event: ``{"node": n, "line": "NVRM: Xid ..."}`` or ``{"node": n, "gpu": local index,
    "xid": code}`` or ``{"node": n, "category": key}``. An Xid the catalogue says needs no action
    gives no event; an Xid the catalogue lacks is refused."""
    if not isinstance(payload, dict):
        raise TwinInputError({"(body)": ["must be a JSON object"]})
    unknown = set(payload) - {"node", "line", "gpu", "xid", "category"}
    if unknown:
        raise TwinInputError({sorted(unknown)[0]: ["unknown field"]})
    node = _node(twin, payload.get("node"))
    gpus_per_node = len(twin.pci_bus_ids)
    if "line" in payload:
        if not isinstance(payload["line"], str):
            raise TwinInputError({"line": ["must be a kernel-log line (a string)"]})
        local, xid = parse_xid_line(twin, payload["line"])
        text = payload["line"].strip()
    elif "xid" in payload:
        local, xid = payload.get("gpu"), payload["xid"]
        if isinstance(local, bool) or not isinstance(local, int) or not 0 <= local < gpus_per_node:
            raise TwinInputError({"gpu": [f"give the GPU's index in its node (0-{gpus_per_node - 1})"]})
        if isinstance(xid, bool) or not isinstance(xid, int):
            raise TwinInputError({"xid": ["must be a whole number"]})
        xid, text = _known(xid, "xid"), ""
    elif "category" in payload:
        return twin_inject(twin=twin, category=payload["category"], node=node, kind="ingested")
    else:
        raise TwinInputError({"(body)": ["give line, xid (with gpu) or category"]})
    faults, unmapped = _in_profile(twin, kernel_log.bursts([kernel_log.XidLine(1, twin.pci_bus_ids[local], xid, None,
                                                                                text)]))
    if unmapped:
        raise TwinInputError({"line" if "line" in payload else "xid": [unmapped[0][1]]})
    failures = _failures(twin, node, faults)
    return twin_inject_all(twin=twin, failures=failures) if failures else []


# Each Xid category's repair as NVIDIA's catalogue and Fire-Flyer act on it (FF VII-C): its action and hours.
XID_REPAIRS = {category.key: (category.action, category.repair_h) for category in fire_flyer_categories()
               if category.key.startswith("xid-")}


def _in_profile(twin: Twin, bursts: list[kernel_log.Burst]) -> tuple[list, list]:
    """The faults with the twin's failure profile's categories (:func:`twin.kernel_log.profile_category`),
    and those it has none for, each with the reason."""
    known = {category["key"] for category in twin_categories(twin)}
    mapped, unmapped = [], []
    for burst in bursts:
        category = kernel_log.profile_category(burst, twin.failure_profile)
        if burst.category and category not in known:
            xid = f"Xid {burst.primary.xid}" if burst.primary is not None else burst.category
            unmapped.append((burst, f"{xid} has no category in this twin's failure profile ({twin.failure_profile})"))
        elif twin.failure_profile != "fire-flyer" and burst.category in XID_REPAIRS:
            # The profile names the part; the fault's Xids say what it takes (a contained ECC error, Xid
            # 94, is a GPU reset, not the 72-hour replacement of Llama 3's HBM3 category).
            mapped.append(replace(burst, category=category, repair=XID_REPAIRS[burst.category]))
        else:
            mapped.append(replace(burst, category=category))
    return mapped, unmapped


def _not_yet_ingested(twin: Twin, failures: list[dict]) -> list[dict]:
    """The failures not already ingested from an earlier upload of the same log: the same category on
    the same node at the same logged time (a line without a time cannot be told apart, so it applies)."""
    times = [f["logged_at"] for f in failures if f["logged_at"] is not None]
    seen = set(TwinEvent.objects.filter(twin=twin, kind="ingested", logged_at__in=times)
               .values_list("node", "category", "logged_at")) if times else set()
    return [f for f in failures
            if f["logged_at"] is None or (f["node"], f["category"], f["logged_at"]) not in seen]


def _failures(twin: Twin, node: int, bursts: list[kernel_log.Burst]) -> list[dict]:
    """Each fault to act on as a failure for :func:`twin_inject_all`, on the GPU of its primary Xid line."""
    failures = []
    for burst in bursts:
        if not burst.category:
            continue
        local = twin.pci_bus_ids.index(pci_bus(burst.primary.bus))
        codes = ", ".join(f"Xid {line.xid} ({kernel_log.XID_CATALOGUE[line.xid][0]})" for line in burst.lines)
        failures.append({"category": burst.category, "gpu": node * len(twin.pci_bus_ids) + local, "node": node,
                         "kind": "ingested", **({"repair": burst.repair} if burst.repair else {}),
                         "note": "; ".join([codes, *(line.text[:300] for line in burst.lines[:3] if line.text)]),
                         "logged_at": burst.lines[0].logged_at})
    return failures


def _zone(name: str) -> tzinfo:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return timezone.utc if name in ("", "UTC") else ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise TwinInputError({"timezone": [f"'{name}' is not an IANA time zone (e.g. Europe/Berlin)"]}) from None


@dataclass(frozen=True)
class KernelLog:
    """A node's kernel log as sent, checked for what needs no reading: its node, size and time zone."""

    node: int
    lines: list[str]
    boot_time: datetime | None
    year: int | None
    zone: tzinfo


def log_text_lines(text: str) -> list[str]:
    """A log's lines (:func:`twin.kernel_log.log_lines`), at most MAX_LOG_LINES of them."""
    return kernel_log.log_lines(io.StringIO(text, newline=None), max_lines=MAX_LOG_LINES, max_chars=len(text))


def kernel_log_upload(*, twin: Twin, node, text: str | list[str], boot_time: datetime | None = None,
                      year: int | None = None, timezone_name: str = "UTC") -> KernelLog:
    """The upload's node, lines (``text``, or its lines already read) and zone, or a field error
    naming what is wrong with them."""
    if not isinstance(text, str | list):
        raise TwinInputError({"log": ["give the kernel log's text"]})
    node = _node(twin, node)
    try:
        lines = log_text_lines(text) if isinstance(text, str) else text
    except kernel_log.LogSizeError as error:
        raise TwinInputError({"log": [str(error)]}) from None
    return KernelLog(node, lines, boot_time, year, _zone(timezone_name))


def twin_ingest_log(*, twin: Twin, upload: KernelLog, progress: Callable[[int], None] | None = None,
                    on_applied: Callable[[dict], None] | None = None) -> dict:
    """A node's whole kernel log (``dmesg``, ``dmesg -T`` or ``journalctl -k`` output) applied in one
    transaction: its Xid lines, each at the time the log gives it, grouped into faults (the Xids of
    one fault within :data:`twin.kernel_log.BURST_WINDOW_S`), one ingested event per fault; Xid
    lines that cannot be applied (not parseable, a bus the twin lacks, an Xid the catalogue lacks)
    are reported with their line numbers while the others still apply. A log whose times need an
    input it lacks (the boot time for dmesg's seconds since boot) is refused, naming that input.

    The log is read in blocks of :data:`READ_BLOCK_LINES`, ``progress`` told the lines read after
    each; ``on_applied`` runs with the result inside the transaction that applies it."""
    total = len(upload.lines)
    lines, malformed = [], []
    for start in range(0, total, READ_BLOCK_LINES):
        try:
            found, unread = kernel_log.read_lines(upload.lines[start:start + READ_BLOCK_LINES], first_number=start + 1,
                                                  boot_time=upload.boot_time, year=upload.year, zone=upload.zone)
        except kernel_log.LogTimeError as error:
            raise TwinInputError({error.field: [error.reason]}) from None
        lines += found
        malformed += unread
        if progress is not None:
            progress(min(start + READ_BLOCK_LINES, total))
    xid_lines = len(lines) + len(malformed)  # the Xid-marked lines, read or not
    usable = []
    for line in lines:
        try:
            _local_gpu(twin, line.bus, "line")
            _known(line.xid, "line")
        except TwinInputError as error:
            malformed.append({"line": line.number, "reason": "; ".join(r for rs in error.errors.values() for r in rs)})
            continue
        usable.append(line)
    faults = kernel_log.bursts(usable)
    acted_on, unmapped = _in_profile(twin, faults)
    malformed += [{"line": burst.lines[0].number, "reason": reason} for burst, reason in unmapped]
    failures = _failures(twin, upload.node, acted_on)
    with transaction.atomic():
        fresh = _not_yet_ingested(twin, failures)
        events = twin_inject_all(twin=twin, failures=fresh) if fresh else []
        result = {"lines": total, "xid_lines": xid_lines, "skipped_lines": total - xid_lines, "applied": len(usable),
                  "faults": len(faults), "noted": sum(1 for burst in faults if not burst.category),
                  "already_ingested": len(failures) - len(fresh),
                  "malformed": sorted(malformed, key=lambda entry: entry["line"]),
                  "events": [event_json(e) for e in events]}
        if on_applied is not None:
            on_applied(result)
    return result
