"""Reading a node's kernel log: each NVIDIA driver Xid line with the time the log gives it.

These layouts are read, line by line (a log may mix them):

* ``dmesg``: ``[ 12345.678901] NVRM: Xid ...``, seconds since boot; the upload's boot time (or the
  kernel's ``boot_time``) turns them into times;
* ``dmesg -T``: ``[Tue Dec  1 10:42:07 2026] NVRM: Xid ...``, the host's local time;
* ``journalctl -k``: ``Dec 01 10:42:07 host kernel: NVRM: Xid ...`` (no year: the upload's year,
  else the boot time's; ``-o short-precise`` adds microseconds), ``-o short-iso`` (and
  ``short-iso-precise``): ``2026-12-01T10:42:07+0000 host kernel: ...``, ``-o short-full``:
  ``Tue 2026-12-01 10:42:07 CET host kernel: ...``, ``-o short-monotonic`` (seconds since boot, as
  dmesg) and ``-o short-unix`` (seconds since the epoch);
* ``dmesg -x`` (and ``-T -x``): the facility and level (``kern  :warn  : ``) before dmesg's time.

An Xid line whose time is in none of these layouts is listed as not read, never applied without
its time (its fault could then neither be placed nor recognised when the log is sent again).

Times without a zone are the log's ``timezone`` (UTC unless the upload names one).
"""
import io
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo

from simcore.formulas.reliability import FF_XID_COUNTS

XID_LINE = re.compile(r"NVRM: Xid \(PCI:(?P<bus>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): "
                      r"(?P<xid>\d+),")
_UPTIME = re.compile(r"^\[\s*(?P<s>\d+\.\d+)\]")
_DMESG_T = re.compile(r"^\[(?P<t>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4})\]")
_ISO = re.compile(r"^(?P<t>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\s")
_SYSLOG = re.compile(r"^(?P<t>[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2})(?P<f>\.\d{1,6})?\s")
# journalctl -o short-full: "Tue 2026-12-01 10:42:07 CET host kernel: ..." (a zone abbreviation or offset).
_FULL = re.compile(r"^[A-Z][a-z]{2} (?P<t>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})?) "
                   r"(?P<z>[A-Z]{1,5}|[+-]\d{4})\s")
# journalctl -o short-unix: "1764585727.123456 host kernel: ...", seconds since the epoch.
_UNIX = re.compile(r"^(?P<s>\d{9,11}\.\d+)\s")
# dmesg -x: "kern  :warn  : [ 12345.678901] NVRM: ...", the facility and level before the time.
_DMESG_X = re.compile(r"^[a-z]+\s*:\s*[a-z]+\s*:\s")
LAYOUTS = ("dmesg, dmesg -T and dmesg -x; journalctl -k -o short, short-precise, short-full, short-iso, "
           "short-iso-precise, short-monotonic and short-unix")


class LogSizeError(ValueError):
    """A log with more lines or characters than an upload may hold."""


def log_lines(source: io.TextIOBase, *, max_lines: int, max_chars: int) -> list[str]:
    """The log's lines, read from ``source`` as they come (a line ends at ``\\n``, ``\\r\\n`` or
    ``\\r``, as Python's text files read them), without their line ends; :class:`LogSizeError` as
    soon as there are more than ``max_lines`` lines or ``max_chars`` characters, so that no more
    than that is ever read or held (a line longer than what is left of ``max_chars`` is never
    read whole)."""
    lines, chars = [], 0
    while line := source.readline(max_chars - chars + 1):
        chars += len(line)
        if chars > max_chars:
            raise LogSizeError(f"more than {max_chars:,} characters of log")
        if len(lines) == max_lines:
            raise LogSizeError(f"more than {max_lines:,} lines")
        lines.append(line.rstrip("\n"))
    return lines


class LogTimeError(ValueError):
    """A line whose time cannot be known from what the upload gives; ``field`` is the missing input."""

    def __init__(self, field: str, reason: str):
        super().__init__(reason)
        self.field, self.reason = field, reason


@dataclass(frozen=True)
class XidLine:
    """One Xid line: its number in the log, the PCI bus and Xid code it names, its time (UTC; None
    when the line carries none) and the line itself."""

    number: int
    bus: str
    xid: int
    logged_at: datetime | None
    text: str


def line_time(line: str, *, boot_time: datetime | None, year: int | None, zone: tzinfo) -> datetime | None:
    """The UTC time a kernel-log line carries in one of :data:`LAYOUTS` (None when it carries none
    this reads). A short-full zone abbreviation other than UTC or GMT names no one zone, so its
    times are read in the upload's ``timezone``."""
    line = _DMESG_X.sub("", line, count=1)
    if match := _UPTIME.match(line):
        if boot_time is None:
            raise LogTimeError("boot_time", "the log's times are seconds since boot (dmesg): give the boot time "
                                            "(ISO 8601, e.g. from `uptime -s`)")
        return boot_time + timedelta(seconds=float(match["s"]))
    if match := _DMESG_T.match(line):
        return _utc(datetime.strptime(" ".join(match["t"].split()), "%a %b %d %H:%M:%S %Y"), zone)
    if match := _ISO.match(line):
        return _utc(datetime.fromisoformat(match["t"].replace(",", ".")), zone)
    if match := _FULL.match(line):
        moment = datetime.fromisoformat(match["t"])
        offset = match["z"]
        if offset in ("UTC", "GMT", "Z"):
            return moment.replace(tzinfo=timezone.utc)
        if offset[0] in "+-":
            return _utc(datetime.fromisoformat(f"{match['t']}{offset}"), zone)
        return _utc(moment, zone)
    if match := _UNIX.match(line):
        return datetime.fromtimestamp(float(match["s"]), timezone.utc)
    if match := _SYSLOG.match(line):
        if year is None:
            raise LogTimeError("year", "journald's short times have no year: give the year (or the boot time)")
        moment = datetime.strptime(f"{year} {' '.join(match['t'].split())}", "%Y %b %d %H:%M:%S")
        return _utc(moment + timedelta(seconds=float(match["f"] or 0)), zone)
    return None


def _utc(moment: datetime, zone: tzinfo) -> datetime:
    return (moment if moment.tzinfo else moment.replace(tzinfo=zone)).astimezone(timezone.utc)


def xid_lines(text: str, *, boot_time: datetime | None = None, year: int | None = None,
              zone: tzinfo = timezone.utc) -> tuple[list[XidLine], list[dict]]:
    """Every Xid line of a log with its time, and the Xid-marked lines that do not read (each with its
    line number and reason). Without a year, journald's times take the boot time's year."""
    return read_lines(text.splitlines(), first_number=1, boot_time=boot_time, year=year, zone=zone)


def read_lines(lines: list[str], *, first_number: int, boot_time: datetime | None, year: int | None,
               zone: tzinfo) -> tuple[list[XidLine], list[dict]]:
    """:func:`xid_lines` of a run of a log's lines whose first is line ``first_number``."""
    year = year if year is not None else (boot_time.year if boot_time else None)
    found, unread = [], []
    for number, line in enumerate(lines, start=first_number):
        if "NVRM: Xid" not in line:
            continue
        match = XID_LINE.search(line)
        if match is None:
            unread.append({"line": number, "reason": "not an 'NVRM: Xid (PCI:dddd:bb:dd[.f]): <code>, ...' line"})
            continue
        try:
            logged_at = line_time(line, boot_time=boot_time, year=year, zone=zone)
        except LogTimeError:
            raise
        except (ValueError, OverflowError) as error:  # a date no calendar has (month 13, 30 February)
            unread.append({"line": number, "reason": f"its time does not read as a date: {error}"})
            continue
        if logged_at is None:
            unread.append({"line": number, "reason": f"its time is in no layout this reads ({LAYOUTS})"})
            continue
        found.append(XidLine(number, match["bus"], int(match["xid"]), logged_at, line.strip()))
    return found, unread


# NVIDIA's Xid catalogue for Ampere and later (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html,
# its "Resolution Bucket (Immediate Action)" column), each Xid read as the twin's failure category
# with the same handling. Fire-Flyer's own Xids (simcore.formulas.reliability.FF_XID_COUNTS) are their
# own categories; the others take the FF category whose repair is the catalogue's action, and the
# event names the Xid as logged. ROLE: "fault" starts an interruption; "sympathetic" Xids follow
# another fault (45: "Not Solo: IGNORE (follow guidance in other Xid)"; NVLink errors, "generally
# sympathetic or secondary ... follow the resolution for those"; 154, "always expected to be seen with
# another Xid"), and act alone only when solo; "ignore" needs no action (IGNORE).
FAULT, SYMPATHETIC, IGNORE = "fault", "sympathetic", "ignore"
XID_CATALOGUE = {
    8: ("GPU stopped processing", FAULT, "xid-43"),
    13: ("graphics engine exception", FAULT, "xid-13"),
    31: ("GPU memory page fault", FAULT, "xid-31"),
    32: ("invalid or corrupted push buffer stream", FAULT, "xid-13"),
    38: ("driver firmware error", IGNORE, ""),
    43: ("GPU stopped processing", FAULT, "xid-43"),
    44: ("graphics engine fault during context switch", FAULT, "xid-44"),
    45: ("preemptive cleanup", SYMPATHETIC, "xid-45"),
    48: ("double-bit ECC error", FAULT, "xid-48"),
    61: ("internal micro-controller breakpoint", FAULT, "xid-61"),
    62: ("internal micro-controller halt", FAULT, "xid-62"),
    63: ("GPU memory remapping event", FAULT, "xid-63"),
    64: ("GPU memory remapping failure", FAULT, "xid-64"),
    68: ("NVDEC0 exception", FAULT, "xid-13"),
    69: ("graphics engine class error", FAULT, "xid-69"),
    74: ("NVLink error", SYMPATHETIC, "xid-74"),
    79: ("GPU has fallen off the bus", FAULT, "xid-79"),
    92: ("high single-bit ECC error rate", IGNORE, ""),
    94: ("contained memory error", FAULT, "xid-94"),
    95: ("uncontained memory error", FAULT, "xid-95"),
    109: ("context switch timeout", FAULT, "xid-95"),
    110: ("security fault", FAULT, "xid-95"),
    119: ("GSP RPC timeout", FAULT, "xid-119"),
    120: ("GSP error", FAULT, "xid-95"),
    121: ("C2C error (corrected)", IGNORE, ""),
    136: ("NVLink link training failed", FAULT, "xid-95"),
    137: ("NVLink privilege error", IGNORE, ""),
    140: ("unrecovered ECC error", FAULT, "xid-95"),
    143: ("GPU initialization error", FAULT, "xid-95"),
    **{code: (f"NVLink5 {unit} error", SYMPATHETIC, "xid-74")
       for code, unit in zip(range(144, 151), ("SAW", "RLW", "TLW", "TREX", "NVLPW_CTRL", "NETIR", "MSE"))},
    154: ("GPU recovery action changed", SYMPATHETIC, ""),
    155: ("NVLink software-defined error", FAULT, "xid-95"),
    156: ("resource retirement event", FAULT, "xid-95"),
}
# Xid 154's text names the recovery action the driver now requires ("... changed from 0x0 (None) to
# 0x2 (Node Reboot Required)"); the catalogue's values, as the FF category of that repair.
RECOVERY_ACTION = re.compile(r"recovery action changed from 0x[0-9a-fA-F]+ \([^)]*\) to 0x[0-9a-fA-F]+ \(([^)]*)\)")
RECOVERY_CATEGORIES = {"Drain and Reset": "xid-95", "GPU Reset Required": "xid-95", "Node Reboot Required": "xid-48"}
# A fault's Xids, on any of the node's GPUs, from its first one: NVIDIA gives no general window; its
# catalogue's one (CHECK_NVLINK_FAILURE_FLOW: a link down "within that last 30 seconds" makes an NVLink
# Xid "a by-product of the other conditions") is the window here. Within it each GPU with a fault Xid
# of its own is a fault of its own (an application's Xid 13 on one GPU is not another GPU's double-bit
# error); sympathetic Xids on the others follow the hardest of them.
BURST_WINDOW_S = 30.0
# The FF categories by how hard their repair is (job restart < GPU reset < node reboot < replacement).
REPAIR_ORDER = ("job-restart", "gpu-reset", "node-reboot", "replace")
HARDNESS = {f"xid-{code}": REPAIR_ORDER.index(repair) for code, (_, _, repair, _) in FF_XID_COUNTS.items()}


# Another failure profile's category for a fault, by the Xid whose category it took (its primary
# line). Llama 3's Table 5 (Dubey et al. 2024) names the failing part; each Xid goes to the part
# NVIDIA's catalogue gives as its cause: memory errors and row remapping to HBM, the GPU's internal
# micro-controllers and GSP to its system processor, the bus, NVLink and initialisation to the GPU,
# and the application-caused exceptions to a software bug (the job's own fault). The per-node-rate
# profile has one platform category: every fault but the job-caused ones is a node failure.
LLAMA3_BY_XID = {
    **dict.fromkeys((48, 63, 64, 94, 95, 140, 156), "gpu-hbm3"),
    **dict.fromkeys((61, 62, 119, 120), "gpu-system-processor"),
    **dict.fromkeys((74, 79, 136, 143, 155, *range(144, 151)), "faulty-gpu"),
    **dict.fromkeys((8, 13, 31, 32, 43, 44, 45, 68, 69, 109, 110), "software-bug"),
}
JOB_CAUSED = "job-restart"  # an FF category whose repair is only the job's restart is the job's fault


def profile_category(burst: "Burst", profile: str) -> str:
    """The category ``profile`` gives the fault ``burst`` (its FF category for Fire-Flyer's own
    profile; "" where that profile has none for it)."""
    if not burst.category or profile == "fire-flyer":
        return burst.category
    if profile == "llama3":
        xid = burst.primary.xid if burst.primary is not None else None
        return LLAMA3_BY_XID.get(xid, "faulty-gpu" if burst.category in RECOVERY_CATEGORIES.values() else "")
    job_caused = REPAIR_ORDER[HARDNESS[burst.category]] == JOB_CAUSED
    return "" if job_caused else "node-failure"


@dataclass(frozen=True)
class Burst:
    """One fault as the log shows it: its Xid lines, the line whose category the fault takes (None:
    nothing to act on) and that category."""

    lines: tuple[XidLine, ...]
    primary: XidLine | None
    category: str
    repair: tuple[str, float] | None = None  # the action and hours its Xids take, where a profile's category differs


def bursts(lines: list[XidLine], window_s: float = BURST_WINDOW_S) -> list[Burst]:
    """Known Xid lines grouped into faults (lines without a time stand alone): the lines within the
    window of a first one, split by the GPUs with a fault Xid (:func:`_by_gpu`), each with its
    category: the hardest repair among its faults (its sympathetic Xids when it has none), raised to
    the repair an Xid 154 in it requires."""
    groups: list[list[XidLine]] = []
    for line in lines:
        last = groups[-1] if groups else None
        joined = (last is not None and line.logged_at is not None and last[0].logged_at is not None
                  and (line.logged_at - last[0].logged_at).total_seconds() <= window_s)
        if joined:
            last.append(line)
        else:
            groups.append([line])
    return [_burst(part) for group in groups for part in _by_gpu(group)]


def _by_gpu(group: list[XidLine]) -> list[list[XidLine]]:
    """One window's lines as faults: the lines of each GPU (PCI bus) with a fault Xid, in the order
    of their first line, the other GPUs' (sympathetic or ignored) lines with the hardest of them; all
    together when no GPU has one."""
    faulted = list(dict.fromkeys(line.bus for line in group if XID_CATALOGUE[line.xid][1] == FAULT))
    if len(faulted) < 2:
        return [group]
    parts = {bus: [line for line in group if line.bus == bus] for bus in faulted}
    hardest = max(faulted, key=lambda bus: max(HARDNESS[XID_CATALOGUE[line.xid][2]] for line in parts[bus]
                                               if XID_CATALOGUE[line.xid][1] == FAULT))
    parts[hardest] = sorted(parts[hardest] + [line for line in group if line.bus not in parts],
                            key=lambda line: line.number)
    return list(parts.values())


def _burst(group: list[XidLine]) -> Burst:
    def hardness(line):
        return HARDNESS[XID_CATALOGUE[line.xid][2]]

    faults = [line for line in group if XID_CATALOGUE[line.xid][1] == FAULT]
    candidates = faults or [line for line in group if XID_CATALOGUE[line.xid][2]]
    primary = max(candidates, key=hardness, default=None)
    category = XID_CATALOGUE[primary.xid][2] if primary else ""
    for line in group:
        required = RECOVERY_ACTION.search(line.text) if line.xid == 154 else None
        raised = RECOVERY_CATEGORIES.get(required.group(1)) if required else None
        if raised and (not category or HARDNESS[raised] > HARDNESS[category]):
            category, primary = raised, primary or line
    return Burst(tuple(group), primary, category)
