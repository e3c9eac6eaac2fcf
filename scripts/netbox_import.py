"""Import plans' NetBox files into a running NetBox through its own bulk-import views, by hand.

Run inside NetBox 4.x (its checkout's ``netbox/`` directory, its virtualenv), not in this project and
not in CI, which cannot fetch NetBox:

    PLAN_FILES=/tmp/nbfiles PLANS="dgx-a100-3layer ff2-pcie-2zone" \\
        python manage.py shell -c "exec(open('/path/to/scripts/netbox_import.py').read())"

``PLAN_FILES`` holds ``<plan>.zip`` files written by ``manage.py export_netbox <plan> <zip> --existing
<the plans before it>`` (and ``--existing-manufacturers`` for those NetBox has already). Each file
goes to the form the UI's "Import" posts, in the files' order: a file of at most ``BACKGROUND_ROWS``
rows (``NETBOX_BACKGROUND_ROWS``, 100 by default) uploaded and imported in the request; a larger one
as NetBox's background jobs, as the UI's "Background job" box makes them, which a running
``manage.py rqworker`` imports (a request making 176 devices with their 4,096 interfaces took 61 s,
past a web server's usual timeout). A background job's data is pasted, not uploaded (NetBox 4.6.8's
job found an uploaded file already read: "StopIteration" in ``parse_csv``), in parts of at most
``PART_ROWS`` rows and ``PART_BYTES``, each with the header row: a job is stopped after NetBox's
RQ_DEFAULT_TIMEOUT (300 s; 3,200 cables were, on 2 cores) and a pasted form is held to Django's
DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MiB). ``NETBOX_FROM=<file>`` (``cables``, say) starts each plan at
that file, to go on after a refusal is fixed. One JSON line is printed per file: its rows, how it went
(``imported``, or ``refused`` with NetBox's own messages: the import form's errors, or the job's
error log), the seconds it took and the jobs' ids. The objects NetBox holds are printed at the end;
the exit status is 1 when a file was refused, and no later file is sent.
"""
import json
import os
import time
import zipfile

from core.models import Job
from dcim.models import Cable, Device, DeviceRole, DeviceType, Interface, InventoryItem, Manufacturer, Rack, Site
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.test.utils import setup_test_environment

BACKGROUND_ROWS = int(os.environ.get("NETBOX_BACKGROUND_ROWS", "100"))
PART_ROWS = 1000
PART_BYTES = 2_000_000
JOB_WAIT_S = 3600


def form_errors(response) -> list[str]:
    """The import form's errors as the page shows them (the test environment keeps its context)."""
    form = (response.context or {}).get("form")
    if form is None:
        return [f"HTTP {response.status_code} with no import form"]
    return [f"{field}: {message}" if field != "__all__" else message
            for field, messages in form.errors.items() for message in messages]


def job_errors(user) -> tuple[int, list[str]]:
    """Wait for the background job the import just queued: its id and its errors (none: imported)."""
    job = Job.objects.filter(user=user).order_by("-created").first()
    deadline = time.time() + JOB_WAIT_S
    while job.status not in ("completed", "errored", "failed") and time.time() < deadline:
        time.sleep(1)
        job.refresh_from_db()
    errors = [entry.get("message", str(entry)) for entry in job.log_entries or []
              if isinstance(entry, dict) and entry.get("level") in ("error", "warning")]
    if job.error:
        errors.append(job.error.strip().splitlines()[-1])
    if job.status != "completed" and not errors:
        errors.append(f"job {job.pk} {job.status}")
    return job.pk, errors


def csv_parts(text: str) -> list[str]:
    """The CSV in parts of at most PART_ROWS rows and PART_BYTES, each starting with the header row."""
    header, *rows = text.splitlines(keepends=True)
    parts, part, size = [], [], len(header)
    for row in rows:
        if part and (size + len(row) > PART_BYTES or len(part) == PART_ROWS):
            parts.append(header + "".join(part))
            part, size = [], len(header)
        part.append(row)
        size += len(row)
    return parts + [header + "".join(part)] if part else parts


def in_background(client: Client, user, kind: str, text: str) -> dict:
    jobs = []
    for part in csv_parts(text):
        response = client.post(f"/dcim/{kind}/import/", {"data": part, "format": "auto", "csv_delimiter": "auto",
                                                         "import_method": "direct", "background_job": "on"})
        if response.status_code != 302:
            return {"jobs": jobs, "outcome": "refused", "errors": form_errors(response)}
        job, errors = job_errors(user)
        jobs.append(job)
        if errors:
            return {"jobs": jobs, "outcome": "refused", "errors": errors}
    return {"jobs": jobs, "outcome": "imported"}


def file_kind(member: str) -> str:
    """What a file of the ZIP imports: "cables" for "<plan>-netbox/7-cables.csv"."""
    return member.split("/", 1)[1].split("-", 1)[1].rsplit(".", 1)[0]


def import_file(client: Client, user, member: str, text: str) -> dict:
    kind = file_kind(member)
    fmt = "yaml" if member.endswith(".yaml") else "csv"
    rows = text.count("\n---") + text.startswith("---") if fmt == "yaml" else len(text.strip().splitlines()) - 1
    outcome = {"file": kind, "rows": rows}
    if rows <= 0:
        return {**outcome, "outcome": "empty"}
    started = time.time()
    if fmt == "csv" and rows > BACKGROUND_ROWS:
        return {**outcome, **in_background(client, user, kind, text), "seconds": round(time.time() - started, 1)}
    upload = SimpleUploadedFile(member.rsplit("/", 1)[1], text.encode(), content_type="text/plain")
    response = client.post(f"/dcim/{kind}/import/", {"upload_file": upload, "format": "auto",  # as the UI's default
                                                     "csv_delimiter": "auto", "import_method": "upload"})
    done = {"outcome": "imported"} if response.status_code == 302 else {"outcome": "refused",
                                                                       "errors": form_errors(response)}
    return {**outcome, **done, "seconds": round(time.time() - started, 1)}


def main():
    setup_test_environment()
    user, _ = get_user_model().objects.get_or_create(username="planner-import")
    user.is_superuser = user.is_staff = True
    user.save()
    client = Client()
    client.force_login(user)
    refused = False
    for plan in os.environ["PLANS"].split():
        archive = zipfile.ZipFile(os.path.join(os.environ["PLAN_FILES"], f"{plan}.zip"))
        members = sorted(archive.namelist())
        start = next((i for i, m in enumerate(members) if file_kind(m) == os.environ.get("NETBOX_FROM")), 0)
        for member in members[start:]:
            result = import_file(client, user, member, archive.read(member).decode())
            print(json.dumps({"plan": plan, **result}), flush=True)
            if result["outcome"] == "refused":
                refused = True
                break
        if refused:
            break
    print(json.dumps({model.__name__: model.objects.count() for model in
                      (Manufacturer, DeviceRole, Site, Rack, DeviceType, Device, Interface, Cable, InventoryItem)}),
          flush=True)
    if refused:
        raise SystemExit(1)


main()
