"""Reading a node's kernel log: each NVIDIA driver Xid line with the time the log gives it.

Three layouts are read, line by line (a log may mix them):

* ``dmesg``: ``[ 12345.678901] NVRM: Xid ...``, seconds since boot; the upload's boot time (or the
  kernel's ``boot_time``) turns them into times;
* ``dmesg -T``: ``[Tue Dec  1 10:42:07 2026] NVRM: Xid ...``, the host's local time;
* ``journalctl -k``: ``Dec 01 10:42:07 host kernel: NVRM: Xid ...`` (no year: the upload's year,
  else the boot time's) or ``-o short-iso``: ``2026-12-01T10:42:07+0000 host kernel: ...``.

Times without a zone are the log's ``timezone`` (UTC unless the upload names one).
"""
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo

XID_LINE = re.compile(r"NVRM: Xid \(PCI:(?P<bus>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): "
                      r"(?P<xid>\d+),")
_UPTIME = re.compile(r"^\[\s*(?P<s>\d+\.\d+)\]")
_DMESG_T = re.compile(r"^\[(?P<t>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4})\]")
_ISO = re.compile(r"^(?P<t>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\s")
_SYSLOG = re.compile(r"^(?P<t>[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2})\s")


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
    """The UTC time a kernel-log line carries (None when it carries none)."""
    if match := _UPTIME.match(line):
        if boot_time is None:
            raise LogTimeError("boot_time", "the log's times are seconds since boot (dmesg): give the boot time "
                                            "(ISO 8601, e.g. from `uptime -s`)")
        return boot_time + timedelta(seconds=float(match["s"]))
    if match := _DMESG_T.match(line):
        return _utc(datetime.strptime(" ".join(match["t"].split()), "%a %b %d %H:%M:%S %Y"), zone)
    if match := _ISO.match(line):
        return _utc(datetime.fromisoformat(match["t"].replace(",", ".")), zone)
    if match := _SYSLOG.match(line):
        if year is None:
            raise LogTimeError("year", "journald's short times have no year: give the year (or the boot time)")
        return _utc(datetime.strptime(f"{year} {' '.join(match['t'].split())}", "%Y %b %d %H:%M:%S"), zone)
    return None


def _utc(moment: datetime, zone: tzinfo) -> datetime:
    return (moment if moment.tzinfo else moment.replace(tzinfo=zone)).astimezone(timezone.utc)


def xid_lines(text: str, *, boot_time: datetime | None = None, year: int | None = None,
              zone: tzinfo = timezone.utc) -> tuple[list[XidLine], list[dict]]:
    """Every Xid line of a log with its time, and the Xid-marked lines that do not read (each with its
    line number and reason). Without a year, journald's times take the boot time's year."""
    year = year if year is not None else (boot_time.year if boot_time else None)
    found, unread = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if "NVRM: Xid" not in line:
            continue
        match = XID_LINE.search(line)
        if match is None:
            unread.append({"line": number, "reason": "not an 'NVRM: Xid (PCI:dddd:bb:dd[.f]): <code>, ...' line"})
            continue
        found.append(XidLine(number, match["bus"], int(match["xid"]),
                             line_time(line, boot_time=boot_time, year=year, zone=zone), line.strip()))
    return found, unread
