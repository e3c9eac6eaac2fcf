"""Who may do what: every kind of caller against the API's endpoints and websocket routes.

Callers: anonymous; the owner's read-only token; another signed-in user (for what the owner shares,
its viewer); the owner; staff. The owner has a private plan, workload, sweep and twin, and a shared
plan and twin. Each cell is the expected status code.
"""
import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from rest_framework.test import APIClient

from planner.models import AccessToken, ClusterPlan, Sweep, Workload
from planner.services.measurements import measurement_upload
from planner.services.runs import run_create
from planner.services.sweeps import sweep_create
from tests.helpers import ANONYMOUS, session_headers
from twin.services.creation import twin_create

CALLERS = ("anonymous", "read_only_token", "other_user", "owner", "staff")
SWITCH = {"slug": "matrix-switch", "name": "M", "vendor": "x", "source": "test", "confidence": "estimate",
          "radix": 40, "port_speed_gbit_s": 200, "protocol": "ib"}
SCENARIO = {"cluster": {"node_count": 10, "node": {"gpus": 8, "accelerator": {"family": "ampere",
                                                                              "peak_fp16_tflops": 312, "tdp_w": 400},
                                                   "compute_nics": 1, "compute_nic_gbit_s": 200},
                        "fabric": {"switch_radix": 40, "switch_gbit_s": 200}}}

# (method, path template, body, expected codes for CALLERS in order)
MATRIX = [
    ("get", "/api/catalog/switches/", None, (401, 200, 200, 200, 200)),
    ("post", "/api/catalog/switches/", SWITCH, (401, 403, 403, 403, 403)),
    ("get", "/api/plans/{plan}/", None, (401, 200, 404, 200, 200)),
    ("patch", "/api/plans/{plan}/", {"description": "changed"}, (401, 403, 404, 200, 200)),
    ("delete", "/api/plans/{plan}/", None, (401, 403, 404, 409, 409)),  # its sweep and twin protect it
    ("post", "/api/plans/{plan}/evaluate/", {}, (401, 200, 404, 200, 200)),
    ("get", "/api/plans/{plan}/bom/", None, (401, 200, 404, 200, 200)),
    ("post", "/api/plans/{plan}/clone/", {"slug": "matrix-copy"}, (401, 403, 404, 201, 201)),
    ("get", "/api/plans/{plan}/netbox/?file=sites", None, (401, 200, 404, 200, 200)),
    ("get", "/api/measurements/{measurement}/", None, (401, 200, 404, 200, 200)),
    ("get", "/api/measurements/{measurement}/workbook/", None, (401, 200, 404, 200, 200)),
    ("patch", "/api/measurements/{measurement}/", {"name": "renamed"}, (401, 403, 404, 200, 200)),
    # Carrying needs a trace (the owner's is a GEMM CSV: 400 naming why) and a plan of the caller's own.
    ("post", "/api/measurements/{measurement}/carry/", {"plan": "shared-plan"}, (401, 403, 404, 400, 400)),
    ("delete", "/api/measurements/{measurement}/carry/?plan=shared-plan", None, (401, 403, 404, 400, 400)),
    ("delete", "/api/measurements/{measurement}/", None, (401, 403, 404, 204, 204)),
    # A run of the owner's cluster is theirs alone: staff do not see it either.
    ("get", "/api/runs/{run}/", None, (401, 200, 404, 200, 404)),
    ("patch", "/api/runs/{run}/", {"name": "renamed"}, (401, 403, 404, 200, 404)),
    ("delete", "/api/runs/{run}/", None, (401, 403, 404, 204, 404)),
    ("post", "/api/runs/", {"plan": "private-plan", "workload": "private-workload", "measured_s": 10, "source": "x"},
     (401, 403, 400, 201, 201)),
    ("get", "/api/plans/compare/?ids={plan},ff2-pcie-2zone", None, (401, 200, 400, 200, 200)),
    ("patch", "/api/plans/ff2-pcie-2zone/", {"description": "changed"}, (401, 403, 403, 403, 200)),
    ("post", "/api/plans/", {"slug": "matrix-new", "name": "N", "node_type": "ff-pcie-a100", "node_count": 8,
                             "switch": "qm8700", "price_book": "fire-flyer-relative"}, (401, 403, 201, 201, 201)),
    ("get", "/api/workloads/{workload}/", None, (401, 200, 404, 200, 200)),
    ("delete", "/api/workloads/{workload}/", None, (401, 403, 404, 204, 204)),
    ("post", "/api/evaluate/", SCENARIO, (401, 200, 200, 200, 200)),
    ("get", "/api/reliability-profiles/", None, (401, 200, 200, 200, 200)),
    ("post", "/api/plans/preview/", {"node_type": "ff-pcie-a100", "node_count": 8, "switch": "qm8700",
                                     "price_book": "fire-flyer-relative"}, (401, 200, 200, 200, 200)),
    ("post", "/api/workloads/preview/", {"layers": 2, "hidden": 64, "heads": 4, "seq_len": 128, "global_batch": 8,
                                         "gpus": 8, "plan": "ff2-pcie-2zone"}, (401, 200, 200, 200, 200)),
    ("get", "/api/sweeps/{sweep}/", None, (401, 200, 404, 200, 200)),
    ("get", "/api/sweeps/{sweep}/results/", None, (401, 200, 404, 200, 200)),
    ("post", "/api/sweeps/{sweep}/cancel/", None, (401, 403, 404, 200, 200)),
    ("get", "/api/twins/{twin}/state/", None, (401, 200, 404, 200, 200)),
    ("post", "/api/twins/{twin}/inject/", {"category": "xid-74", "gpu": 0}, (401, 403, 404, 201, 201)),
    ("post", "/api/twins/{twin}/pause/", None, (401, 403, 404, 200, 200)),
    ("get", "/api/twins/{twin}/events/", None, (401, 200, 404, 200, 200)),
    ("post", "/api/tokens/", {"name": "matrix"}, (401, 403, 201, 201, 201)),
    # Anyone signed in may keep a price book of their own; a shared one changes only with the catalogue's
    # permission, which no caller here holds.
    ("post", "/api/catalog/price-books/", {"slug": "matrix-book", "name": "B", "vendor": "x", "source": "quotes",
                                           "confidence": "secondary", "currency": "USD",
                                           "price_date": "2026-11-01"}, (401, 403, 201, 201, 201)),
    ("post", "/api/catalog/price-books/fire-flyer-relative/items/",
     {"part_kind": "switch", "part_slug": "qm8700", "unit_price": "1", "basis": "x", "confidence": "estimate"},
     (401, 403, 403, 403, 403)),
    ("post", "/api/catalog/price-books/fire-flyer-relative/copy/", {"slug": "matrix-copy-book"},
     (401, 403, 201, 201, 201)),
]

# What a viewer may do with what the owner shares with every signed-in user: read, evaluate and copy
# it, watch the twin; never change, delete or steer it. "other_user" here is that viewer.
SHARED_MATRIX = [
    ("get", "/api/plans/{shared_plan}/", None, (401, 200, 200, 200, 200)),
    ("patch", "/api/plans/{shared_plan}/", {"description": "changed"}, (401, 403, 403, 200, 200)),
    ("delete", "/api/plans/{shared_plan}/", None, (401, 403, 403, 409, 409)),  # its twin protects it
    ("post", "/api/plans/{shared_plan}/evaluate/", {}, (401, 200, 200, 200, 200)),
    ("get", "/api/plans/{shared_plan}/bom/", None, (401, 200, 200, 200, 200)),
    ("post", "/api/plans/{shared_plan}/clone/", {"slug": "viewer-copy"}, (401, 403, 201, 201, 201)),
    ("get", "/api/plans/compare/?ids={shared_plan},ff2-pcie-2zone", None, (401, 200, 200, 200, 200)),
    ("get", "/api/measurements/{shared_measurement}/", None, (401, 200, 200, 200, 200)),
    ("patch", "/api/measurements/{shared_measurement}/", {"use_as_override": True}, (401, 403, 403, 200, 200)),
    ("get", "/api/twins/{shared_twin}/state/", None, (401, 200, 200, 200, 200)),
    ("get", "/api/twins/{shared_twin}/events/", None, (401, 200, 200, 200, 200)),
    ("post", "/api/twins/{shared_twin}/inject/", {"category": "xid-74", "gpu": 0}, (401, 403, 403, 201, 201)),
    ("post", "/api/twins/{shared_twin}/pause/", None, (401, 403, 403, 200, 200)),
    ("post", "/api/twins/{shared_twin}/pci-bus-ids/", {"pci_bus_ids": [f"0000:{b}:00.0" for b in range(10, 18)]},
     (401, 403, 403, 200, 200)),
    ("delete", "/api/twins/{shared_twin}/", None, (401, 403, 403, 204, 204)),
]


@pytest.fixture
def world(catalog, django_user_model, monkeypatch):
    monkeypatch.setattr("planner.services.submission.sweep_enqueue", lambda sweep: None)
    owner = django_user_model.objects.create_user("owner", password="pw-owner-1234")
    other = django_user_model.objects.create_user("other", password="pw-other-1234")
    staff = django_user_model.objects.create_user("staff", password="pw-staff-1234", is_staff=True)
    preset = ClusterPlan.objects.get(slug="ff2-pcie-2zone")
    plan = ClusterPlan.objects.get(pk=preset.pk)
    plan.pk, plan.slug, plan.owner, plan.visibility, plan.node_count = None, "private-plan", owner, "private", 64
    plan.save()
    workload = Workload.objects.get(slug="llama-13b-512")
    workload.pk, workload.slug, workload.owner, workload.visibility = None, "private-workload", owner, "private"
    workload.save()
    sweep = sweep_create(owner=owner, plan=plan, workload=None, spec={"axes": {"cluster.node_count": [32, 64]}})
    jobs = [{"name": "j", "nodes": 8, "work_s": 1e6, "interval_s": 600, "checkpoint_s": 30, "restart_s": 60}]
    twin = twin_create(owner=owner, plan=plan, jobs=jobs)
    shared = ClusterPlan.objects.get(pk=plan.pk)
    shared.pk, shared.slug, shared.visibility = None, "shared-plan", "shared"
    shared.save()
    shared_twin = twin_create(owner=owner, plan=shared, jobs=jobs)
    shared_twin.visibility = "shared"
    shared_twin.save(update_fields=["visibility"])
    clients = {"anonymous": APIClient()}
    for name, user in (("other_user", other), ("owner", owner), ("staff", staff)):
        clients[name] = APIClient()
        clients[name].force_authenticate(user)
    read_only = AccessToken.objects.create(user=owner, name="ro", read_only=True)
    clients["read_only_token"] = APIClient()
    clients["read_only_token"].credentials(HTTP_AUTHORIZATION=f"Token {read_only.key}")
    gemm = b"m,n,k,dtype,tflops\n8192,8192,8192,bf16,250\n"
    measurement, shared_measurement = (
        measurement_upload(owner=owner, kind="gemm", content=gemm, filename="gemm.csv", plan=on)
        for on in (plan, shared))
    run = run_create(owner=owner, plan=plan, workload=workload, measured_s=10.0, source="the owner's cluster")
    ids = {"plan": plan.slug, "workload": workload.slug, "sweep": sweep.pk, "twin": twin.pk, "run": run.pk,
           "shared_plan": shared.slug, "shared_twin": shared_twin.pk, "measurement": measurement.pk,
           "shared_measurement": shared_measurement.pk}
    return clients, ids, {"owner": owner, "other_user": other, "staff": staff}


@pytest.mark.parametrize("caller_index,caller", list(enumerate(CALLERS)))
@pytest.mark.parametrize("method,path,body,expected", MATRIX + SHARED_MATRIX,
                         ids=[f"{m} {p}" for m, p, _, _ in MATRIX + SHARED_MATRIX])
def test_authorization_matrix(method, path, body, expected, caller_index, caller, world):
    clients, ids, _ = world
    response = getattr(clients[caller], method)(path.format(**ids), body, format="json")
    assert response.status_code == expected[caller_index], (caller, method, path, response.content[:300])




WEBSOCKETS = [("/ws/sweeps/{sweep}/", Sweep), ("/ws/twins/{twin}/", None)]
SOCKET_EXPECTED = {"anonymous": 4401, "other_user": 4403, "owner": True, "staff": True}


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("route", [r for r, _ in WEBSOCKETS])
def test_websocket_routes_authorize_viewers(route, world):
    from config.asgi import application

    _, ids, users = world
    headers = {name: session_headers(users[name]) for name in ("other_user", "owner", "staff")}
    headers["anonymous"] = ANONYMOUS

    async def attempt(header):
        communicator = WebsocketCommunicator(application, route.format(**ids), headers=header)
        connected, code = await communicator.connect()
        await communicator.disconnect()
        return connected, code

    for caller, expected in SOCKET_EXPECTED.items():
        connected, code = async_to_sync(attempt)(headers[caller])
        if expected is True:
            assert connected, caller
        else:
            assert (connected, code) == (False, expected), caller
    foreign = [(b"origin", b"http://evil.example"), *headers["owner"][1:]]
    assert async_to_sync(attempt)(foreign)[0] is False


PAGE_CALLERS = ("anonymous", "other_user", "owner", "staff")
# Browser pages: anonymous callers are sent to the login page (302); a private object is not found
# (404) for another user; presets are edited only by staff (403).
PAGES = [
    ("/", (302, 200, 200, 200)),
    ("/catalog/", (302, 200, 200, 200)),
    ("/plans/{plan}/", (302, 404, 200, 200)),
    ("/plans/{plan}/edit/", (302, 404, 200, 200)),
    ("/plans/ff2-pcie-2zone/edit/", (302, 403, 403, 200)),
    ("/plans/new/?from={plan}", (302, 404, 200, 200)),
    ("/sweeps/{sweep}/", (302, 404, 200, 200)),
    ("/twins/{twin}/", (302, 404, 200, 200)),
    ("/plans/{shared_plan}/", (302, 200, 200, 200)),
    ("/plans/{shared_plan}/edit/", (302, 403, 200, 200)),
    ("/twins/{shared_twin}/", (302, 200, 200, 200)),
    ("/tokens/", (302, 200, 200, 200)),
    ("/workloads/", (302, 200, 200, 200)),
    ("/workloads/new/?from={workload}", (302, 404, 200, 200)),
    ("/workloads/{workload}/edit/", (302, 404, 200, 200)),
    ("/workloads/llama-13b-512/edit/", (302, 403, 403, 200)),
]


@pytest.mark.parametrize("path,expected", PAGES, ids=[p for p, _ in PAGES])
def test_page_authorization(path, expected, world, client):
    _, ids, users = world
    for caller, code in zip(PAGE_CALLERS, expected):
        client.logout()
        if caller != "anonymous":
            client.force_login(users[caller])
        response = client.get(path.format(**ids))
        assert response.status_code == code, (caller, path)
        if code == 302:
            assert response["Location"].startswith("/login/?next=")


def test_compare_page_hides_plans_you_cannot_see(world, client):
    _, ids, users = world
    client.force_login(users["other_user"])
    response = client.get(f"/compare/?ids={ids['plan']},ff2-pcie-2zone")
    assert response.status_code == 200
    assert f"no plan &#x27;{ids['plan']}&#x27; is visible to you" in response.content.decode()
    assert 'id="comparison"' not in response.content.decode()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_viewer_may_watch_a_shared_twin(world):
    from config.asgi import application

    _, ids, users = world

    async def attempt(route, header):
        communicator = WebsocketCommunicator(application, route, headers=header)
        connected, code = await communicator.connect()
        snapshot = await communicator.receive_json_from() if connected else None
        await communicator.disconnect()
        return connected, code, snapshot

    connected, _, snapshot = async_to_sync(attempt)(f"/ws/twins/{ids['shared_twin']}/",
                                                    session_headers(users["other_user"]))
    assert connected and snapshot["type"] == "snapshot" and snapshot["twin"] == ids["shared_twin"]
    refused = async_to_sync(attempt)(f"/ws/twins/{ids['twin']}/", session_headers(users["other_user"]))
    assert refused[:2] == (False, 4403)
