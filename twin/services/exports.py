"""A twin's events as a streamed CSV download."""
import csv
import io
from collections.abc import Iterator

from planner.services.cells import CSV_LINE_END, csv_row
from twin.services.persistence import event_json

EVENT_CSV_COLUMNS = ("seq", "time_s", "kind", "category", "gpu", "node", "job", "message", "logged_at")


def events_csv(events) -> Iterator[str]:
    """A twin's events as CSV text, a header then a block of rows at a time (for a streamed
    download: the database is read in batches, never all at once); simulated times to the
    millisecond."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=EVENT_CSV_COLUMNS, lineterminator=CSV_LINE_END)
    writer.writeheader()
    for number, row in enumerate(events.order_by("seq").iterator(chunk_size=2000), start=1):
        writer.writerow(csv_row({**event_json(row), "time_s": round(row.sim_time_s, 3)}))
        if number % 2000 == 0:
            yield out.getvalue()
            out.seek(0)
            out.truncate()
    yield out.getvalue()
