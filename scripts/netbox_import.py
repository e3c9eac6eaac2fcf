"""Import plans' NetBox files into a running NetBox through its own bulk-import views, by hand.

Run inside NetBox (its checkout's ``netbox/`` directory, its virtualenv), not in this project and
not in CI, which cannot fetch NetBox:

    PLAN_FILES=/tmp/nbfiles PLANS="dgx-a100-3layer ff2-pcie-2zone" \\
        python manage.py shell -c "exec(open('/path/to/scripts/netbox_import.py').read())"

``PLAN_FILES`` holds ``<plan>.zip`` files written by ``manage.py export_netbox <plan> <zip> --existing
<the plans before it>``. Each file goes to the form the UI's "Import" posts (as an uploaded file:
NetBox refuses pasted data over Django's DATA_UPLOAD_MAX_MEMORY_SIZE), in the files' order. One JSON
line is printed per file: its rows, the HTTP status (302: imported), the seconds it took and, for a
refused file, NetBox's messages verbatim. The objects NetBox holds are printed at the end.
"""
import json
import os
import re
import time
import zipfile

from dcim.models import Cable, Device, DeviceRole, DeviceType, Interface, Manufacturer, Site
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client


def import_file(client: Client, member: str, text: str) -> dict:
    kind = member.split("/", 1)[1].split("-", 1)[1].rsplit(".", 1)[0]
    fmt = "yaml" if member.endswith(".yaml") else "csv"
    rows = text.count("\n---") + 1 if fmt == "yaml" else len(text.strip().splitlines()) - 1
    outcome = {"file": kind, "rows": rows}
    if rows <= 0:
        return {**outcome, "status": "empty"}
    started = time.time()
    upload = SimpleUploadedFile(member.rsplit("/", 1)[1], text.encode(), content_type="text/plain")
    response = client.post(f"/dcim/{kind}/import/", {"upload_file": upload, "format": fmt, "csv_delimiter": ",",
                                                      "import_method": "upload"})
    outcome.update(http=response.status_code, seconds=round(time.time() - started, 1))
    if response.status_code != 302:
        page = response.content.decode(errors="replace")
        outcome["errors"] = [" ".join(t.split()) for t in re.findall(r"Error\s*(Record \d+ [^<]{1,300})", page)][:20]
    return outcome


def main():
    user, _ = get_user_model().objects.get_or_create(username="planner-import")
    user.is_superuser = user.is_staff = True
    user.save()
    client = Client()
    client.force_login(user)
    for plan in os.environ["PLANS"].split():
        archive = zipfile.ZipFile(os.path.join(os.environ["PLAN_FILES"], f"{plan}.zip"))
        for member in sorted(archive.namelist()):
            print(json.dumps({"plan": plan, **import_file(client, member, archive.read(member).decode())}), flush=True)
    print(json.dumps({model.__name__: model.objects.count()
                      for model in (Manufacturer, DeviceRole, Site, DeviceType, Device, Interface, Cable)}), flush=True)


main()
