"""A procurement script's client generated from the OpenAPI schema (openapi-python-client) works
against a running server: a list, a download and an error (an RFC 9457 problem document), each
parsed as the schema says."""
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from planner.services.accounts import token_issue

GENERATOR = "openapi-python-client==0.29.1"


@pytest.fixture(scope="module")
def generator(tmp_path_factory) -> Path:
    """openapi-python-client in a throwaway environment of its own (it is no dependency of the project)."""
    venv = tmp_path_factory.mktemp("generator") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    GENERATOR], check=True, timeout=600)
    return venv / "bin" / "openapi-python-client"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_generated_client_lists_downloads_and_reads_an_error(generator, live_server, user, reader_client,
                                                               tmp_path, monkeypatch):
    schema = tmp_path / "schema.json"
    schema.write_bytes(reader_client.get("/api/schema/?format=json").content)
    made = subprocess.run([str(generator), "generate", "--path", str(schema), "--meta", "none"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert made.returncode == 0 and "WARNING" not in made.stdout, made.stdout[-3000:] + made.stderr[-2000:]
    monkeypatch.syspath_prepend(str(tmp_path))
    package = "ai_cluster_planner_api_client"
    client_module = importlib.import_module(package)
    plans_list = importlib.import_module(f"{package}.api.plans.plans_list")
    plans_retrieve = importlib.import_module(f"{package}.api.plans.plans_retrieve")
    netbox = importlib.import_module(f"{package}.api.plans.plans_netbox_retrieve")
    file_choice = importlib.import_module(f"{package}.models.plans_netbox_retrieve_file").PlansNetboxRetrieveFile
    problem_model = importlib.import_module(f"{package}.models.problem").Problem

    client = client_module.AuthenticatedClient(base_url=live_server.url, token=token_issue(user))  # Bearer
    listed = plans_list.sync_detailed(client=client, page_size=50)
    assert listed.status_code == 200
    assert "gb200-nvl72-1152" in {plan.slug for plan in listed.parsed.results} and listed.parsed.count >= 12

    sites = netbox.sync_detailed("gb200-nvl72-1152", client=client, file=file_choice.SITES)
    assert sites.status_code == 200 and sites.parsed.splitlines() == ["name,slug,status",
                                                                    "gb200-nvl72-1152,gb200-nvl72-1152,planned"]

    missing = plans_retrieve.sync_detailed("no-such-plan", client=client)
    assert missing.status_code == 404 and isinstance(missing.parsed, problem_model)
    assert (missing.parsed.status, missing.parsed.title) == (404, "Not Found") and missing.parsed.detail
