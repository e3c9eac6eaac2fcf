"""Real events into a twin: an NVIDIA driver Xid line, an Xid code, a category, or a node's whole
kernel log."""
import re

from django.db import transaction

from simcore.formulas import reliability
from twin.models import Twin, TwinEvent
from twin.services.controls import twin_inject
from twin.services.creation import pci_bus
from twin.services.errors import TwinInputError
from twin.services.persistence import event_json

XID_LINE = re.compile(r"NVRM: Xid \(PCI:(?P<bus>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): "
                      r"(?P<xid>\d+),")


def parse_xid_line(twin: Twin, line: str) -> tuple[int, int]:
    """(local GPU index, Xid code) from an NVIDIA driver kernel-log line."""
    match = XID_LINE.search(line or "")
    if match is None:
        raise TwinInputError({"line": ["not an 'NVRM: Xid (PCI:dddd:bb:dd[.f]): <code>, ...' kernel-log line"]})
    bus = pci_bus(match["bus"])
    if bus not in twin.pci_bus_ids:
        known = ", ".join(twin.pci_bus_ids)
        raise TwinInputError({"line": [f"PCI bus {bus} is not one of this twin's GPUs ({known})"]})
    return twin.pci_bus_ids.index(bus), int(match["xid"])


def twin_ingest(*, twin: Twin, payload: dict) -> list[TwinEvent]:
    """A real event: ``{"node": n, "line": "NVRM: Xid ..."}`` or ``{"node": n, "gpu": local index,
    "xid": code}`` or ``{"node": n, "category": key}``. Unknown Xid codes are refused."""
    if not isinstance(payload, dict):
        raise TwinInputError({"(body)": ["must be a JSON object"]})
    unknown = set(payload) - {"node", "line", "gpu", "xid", "category"}
    if unknown:
        raise TwinInputError({sorted(unknown)[0]: ["unknown field"]})
    node = payload.get("node")
    if isinstance(node, bool) or not isinstance(node, int):
        raise TwinInputError({"node": ["give the node index the event came from"]})
    gpus_per_node = len(twin.pci_bus_ids)
    if "line" in payload:
        if not isinstance(payload["line"], str):
            raise TwinInputError({"line": ["must be a kernel-log line (a string)"]})
        local, xid = parse_xid_line(twin, payload["line"])
        category, note = f"xid-{xid}", payload["line"].strip()[:300]
    elif "xid" in payload:
        local, xid = payload.get("gpu"), payload["xid"]
        if isinstance(local, bool) or not isinstance(local, int) or not 0 <= local < gpus_per_node:
            raise TwinInputError({"gpu": [f"give the GPU's index in its node (0-{gpus_per_node - 1})"]})
        if isinstance(xid, bool) or not isinstance(xid, int):
            raise TwinInputError({"xid": ["must be a whole number"]})
        category, note = f"xid-{xid}", ""
    elif "category" in payload:
        return twin_inject(twin=twin, category=payload["category"], node=node, kind="ingested")
    else:
        raise TwinInputError({"(body)": ["give line, xid (with gpu) or category"]})
    if xid not in reliability.FF_XID_COUNTS:
        raise TwinInputError({"xid": [f"Xid {xid} is not a known category "
                                      f"(known: {', '.join(map(str, reliability.FF_XID_COUNTS))})"]})
    return twin_inject(twin=twin, category=category, gpu=node * gpus_per_node + local, kind="ingested", note=note)


XID_MARKER = "NVRM: Xid"
MAX_LOG_LINES = 100_000


@transaction.atomic
def twin_ingest_log(*, twin: Twin, node, text) -> dict:
    """A node's whole kernel log (``dmesg`` or ``journalctl -k`` output) applied in one transaction:
    every line with an ``NVRM: Xid`` becomes an ingested event, the rest is skipped and counted, and
    an Xid line that cannot be applied (not parseable, a bus the twin lacks, an unknown code) is
    reported with its line number while the others still apply."""
    if not isinstance(text, str):
        raise TwinInputError({"log": ["give the kernel log's text"]})
    if isinstance(node, bool) or not isinstance(node, int) or not 0 <= node < twin.node_count:
        raise TwinInputError({"node": [f"the node the log came from (0-{twin.node_count - 1})"]})
    lines = text.splitlines()
    if len(lines) > MAX_LOG_LINES:
        raise TwinInputError({"log": [f"{len(lines):,} lines; at most {MAX_LOG_LINES:,} per upload"]})
    events, malformed, xid_lines = [], [], 0
    for number, line in enumerate(lines, start=1):
        if XID_MARKER not in line:
            continue
        xid_lines += 1
        try:
            events += twin_ingest(twin=twin, payload={"node": node, "line": line})
        except TwinInputError as error:
            malformed.append({"line": number, "reason": "; ".join(r for reasons in error.errors.values()
                                                                  for r in reasons)})
    return {"lines": len(lines), "xid_lines": xid_lines, "skipped_lines": len(lines) - xid_lines,
            "applied": xid_lines - len(malformed), "malformed": malformed,
            "events": [event_json(e) for e in events]}
