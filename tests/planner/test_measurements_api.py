"""Measurements through the API: nccl-tests and GEMM uploads, measured vs predicted, overrides that
change evaluations and sweeps, and files that do not read (refused whole, naming the line)."""
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from planner.models import ClusterPlan, Measurement

DATA = Path(__file__).resolve().parent.parent / "data"
NCCL_8 = DATA / "nccl_all_reduce_dgx_a100_8gpu.txt"
NCCL_16 = DATA / "nccl_all_reduce_dgx_a100_2node.txt"
GEMM = DATA / "gemm_dgx_a100.csv"


def file(path: Path, content: bytes | None = None):
    return SimpleUploadedFile(path.name, path.read_bytes() if content is None else content)


def upload(client, path, kind, **fields):
    return client.post("/api/measurements/", {"kind": kind, "file": file(path), **fields}, format="multipart")


def test_nccl_tests_output_uploads_and_shows_measured_against_predicted(reader_client, my_plan):
    response = upload(reader_client, NCCL_8, "nccl-tests", plan=my_plan.slug, note="dgx-a100-01, NCCL 2.18.5")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["collective"] == "all_reduce" and body["node_type"] == "dgx-a100" and body["plan"] == "my-dgx"
    assert body["provenance"]["ranks"] == 8 and body["provenance"]["hosts"] == ["dgx-a100-01"]
    assert body["provenance"]["devices"] == ["NVIDIA A100-SXM4-80GB"]
    comparison = body["comparison"]
    assert comparison["link"] == "scale-up" and len(comparison["rows"]) == 31
    last = comparison["rows"][-1]
    assert last["size_bytes"] == 8589934592 and last["busbw_gbyte_s"] == 235.2
    # The engine's ring over NVLink 3 at the Ampere share (231.6 of 300 GB/s) and 3.33 us per step:
    assert last["predicted_busbw_gbyte_s"] == pytest.approx(231.6, rel=0.002)
    assert last["error_pct"] == pytest.approx((231.6 / 235.2 - 1) * 100, abs=0.3)
    fitted = body["fitted"]["scaleup_fraction"]
    assert fitted["family_value"] == pytest.approx(231.6 / 300)
    assert fitted["rows"] == 8 and 0.78 < fitted["value"] < 0.80  # the file's ~235 GB/s over 300
    assert body["use_as_override"] is False
    listed = reader_client.get("/api/measurements/").json()
    assert [m["id"] for m in listed["results"]] == [body["id"]]


def test_a_multi_node_run_is_compared_over_the_network_with_nothing_to_fit(reader_client, my_plan):
    body = upload(reader_client, NCCL_16, "nccl-tests", node_type="dgx-a100", collective="all_reduce").json()
    assert body["comparison"]["link"] == "network" and body["comparison"]["hosts"] == 2
    assert body["fitted"] == {}
    refused = upload(reader_client, NCCL_16, "nccl-tests", node_type="dgx-a100", collective="all_reduce",
                     use_as_override=True)
    assert refused.status_code == 400
    assert "network path" in refused.json()["use_as_override"][0]


def test_a_gemm_override_changes_the_plans_evaluation_and_sweeps(reader_client, my_plan, eager_celery, client, user):
    evaluate = lambda: reader_client.post(f"/api/plans/{my_plan.slug}/evaluate/",  # noqa: E731
                                          {"workload": "gpt2-medium-128"}, format="json").json()
    before = evaluate()
    assert before["overrides"] == {}
    assert before["result"]["calibration"]["gemm_fraction"]["source"] == "family"
    body = upload(reader_client, GEMM, "gemm", plan=my_plan.slug).json()
    fitted = body["fitted"]["gemm_fraction"]
    assert fitted["rows"] == 9 and fitted["value"] < fitted["family_value"]
    assert "fp8_gemm_fraction" not in body["fitted"]
    tf32 = [row for row in body["comparison"]["rows"] if row["dtype"] == "tf32"]
    assert tf32[0]["tflops"] == 124.9 and tf32[0]["predicted_tflops"] == pytest.approx(131.2, abs=0.1)
    unchanged = evaluate()
    assert unchanged["result"]["training"]["step_time_s"] == before["result"]["training"]["step_time_s"]

    marked = reader_client.patch(f"/api/measurements/{body['id']}/", {"use_as_override": True}, format="json")
    assert marked.status_code == 200 and marked.json()["use_as_override"] is True
    after = evaluate()
    assert after["overrides"]["gemm_fraction"] == {"value": fitted["value"], "measurement": body["id"],
                                                  "name": "gemm_dgx_a100.csv", "kind": "gemm", "carried": None}
    assert after["result"]["calibration"]["gemm_fraction"] == {"value": fitted["value"], "source": "measured"}
    ratio = after["result"]["compute"]["gemm_fp16_tflops"] / before["result"]["compute"]["gemm_fp16_tflops"]
    assert ratio == pytest.approx(fitted["value"] / fitted["family_value"])
    assert after["result"]["training"]["step_time_s"] > before["result"]["training"]["step_time_s"]

    sweep = reader_client.post("/api/sweeps/", {"plan": my_plan.slug, "axes": {"cluster.node_count": [16, 32]},
                                                "outputs": ["compute.gemm_fp16_tflops"]}, format="json").json()
    assert sweep["calibration"] == [{"gemm_fraction": fitted["value"]}]
    client.force_login(user)
    page = client.get(f"/sweeps/{sweep['id']}/")
    assert b"Overridden by measurement at every point" in page.content and b"gemm_fraction" in page.content
    rows = reader_client.get(f"/api/sweeps/{sweep['id']}/results/").json()["results"]
    assert {row["outputs"]["compute.gemm_fp16_tflops"] for row in rows} == {
        after["result"]["compute"]["gemm_fp16_tflops"]}


def test_an_override_on_a_node_type_applies_to_the_owners_plans_of_that_node_type_only(
        reader_client, my_plan, catalog, user):
    body = upload(reader_client, GEMM, "gemm", node_type="dgx-a100", use_as_override=True).json()
    mine = reader_client.post(f"/api/plans/{my_plan.slug}/evaluate/", {}, format="json").json()
    assert mine["overrides"]["gemm_fraction"]["measurement"] == body["id"]
    preset = reader_client.post("/api/plans/dgx-a100-3layer/evaluate/", {}, format="json").json()
    assert preset["overrides"] == {}  # the preset is not the reader's
    pcie = ClusterPlan.objects.get(slug="ff2-pcie-2zone")
    pcie.pk, pcie.slug, pcie.owner = None, "my-pcie", user
    pcie.save()
    other_node = reader_client.post("/api/plans/my-pcie/evaluate/", {}, format="json").json()
    assert other_node["overrides"] == {}


@pytest.mark.parametrize("path,kind,content,field,message", [
    (GEMM, "gemm", b"m,n,k,dtype,tflops\n4096,4096,4096,bf16,200\n4096,4096,4096,bf17,200\n", "file",
     "line 3: dtype 'bf17' is not one of"),
    (GEMM, "gemm", b"m,n,k,tflops\n1,2,3,4\n", "file", "line 1: the header must be m,n,k,dtype,tflops"),
    (GEMM, "gemm", b"m,n,k,dtype,tflops\n4096,4096,-1,bf16,200\n", "file", "line 2: k -1 must be"),
    (NCCL_8, "nccl-tests", None, "file", "line 32: time 'abc' is not a number"),
    (NCCL_8, "nccl-tests", b"just some text\n", "file", "no result rows found"),
    (GEMM, "gemm", b"\xff\xfe", "file", "is not UTF-8 text"),
])
def test_malformed_files_answer_a_field_error_with_the_line_and_store_nothing(
        reader_client, my_plan, path, kind, content, field, message):
    if content is None:  # the realistic file with one row broken
        lines = path.read_text().splitlines()
        lines[31] = lines[31].replace(lines[31].split()[5], "abc", 1)
        content = "\n".join(lines).encode()
    response = reader_client.post("/api/measurements/", {"kind": kind, "plan": my_plan.slug,
                                                         "file": file(path, content)}, format="multipart")
    assert response.status_code == 400
    assert message in response.json()[field][0]
    assert Measurement.objects.count() == 0


def test_uploads_need_a_plan_of_your_own_and_a_collective_when_the_file_names_none(
        reader_client, my_plan, catalog, django_user_model):
    refused = upload(reader_client, GEMM, "gemm", plan="dgx-a100-3layer")
    assert refused.status_code == 403
    both = upload(reader_client, GEMM, "gemm", plan=my_plan.slug, node_type="dgx-a100")
    assert both.status_code == 400 and "one of them" in both.json()["plan"][0]
    unnamed = upload(reader_client, NCCL_16, "nccl-tests", plan=my_plan.slug)
    assert unnamed.status_code == 400 and "does not name its collective" in unnamed.json()["collective"][0]
    named = NCCL_8.read_text().replace("all_reduce_perf", "all_gather_perf")
    wrong = reader_client.post("/api/measurements/", {"kind": "nccl-tests", "plan": my_plan.slug, "collective":
                                                      "all_reduce", "file": file(NCCL_8, named.encode())},
                               format="multipart")
    assert wrong.status_code == 400 and "all_gather test" in wrong.json()["collective"][0]
    body = upload(reader_client, GEMM, "gemm", plan=my_plan.slug).json()
    other = django_user_model.objects.create_user("other", password="pw-other-1234")
    from rest_framework.test import APIClient
    client = APIClient()
    client.force_authenticate(other)
    assert client.get(f"/api/measurements/{body['id']}/").status_code == 404
    assert client.patch(f"/api/measurements/{body['id']}/", {"name": "x"}, format="json").status_code == 404
    changed = reader_client.patch(f"/api/measurements/{body['id']}/", {"rows": []}, format="json")
    assert changed.status_code == 400 and "upload the file again" in changed.json()["rows"][0]


def test_a_viewer_of_a_shared_plan_sees_that_a_constant_is_measured_but_not_the_owners_private_file(
        reader_client, my_plan, django_user_model):
    from rest_framework.test import APIClient

    upload(reader_client, GEMM, "gemm", node_type="dgx-a100", use_as_override=True)
    my_plan.visibility = "shared"
    my_plan.save(update_fields=["visibility"])
    viewer = APIClient()
    viewer.force_authenticate(django_user_model.objects.create_user("viewer", password="pw-viewer-1234"))
    seen = viewer.post(f"/api/plans/{my_plan.slug}/evaluate/", {}, format="json").json()["overrides"]
    assert seen["gemm_fraction"]["measurement"] is None and seen["gemm_fraction"]["name"] is None
    assert seen["gemm_fraction"]["kind"] == "gemm" and 0.75 < seen["gemm_fraction"]["value"] < 0.84
    mine = reader_client.post(f"/api/plans/{my_plan.slug}/evaluate/", {}, format="json").json()["overrides"]
    assert mine["gemm_fraction"]["name"] == "gemm_dgx_a100.csv"


def test_a_csv_saved_by_excel_with_a_byte_order_mark_reads(reader_client, my_plan):
    content = b"\xef\xbb\xbf" + GEMM.read_bytes()
    response = reader_client.post("/api/measurements/", {"kind": "gemm", "plan": my_plan.slug,
                                                         "file": file(GEMM, content)}, format="multipart")
    assert response.status_code == 201 and len(response.json()["comparison"]["rows"]) == 11


def test_a_gemm_file_past_cublas_dimensions_is_refused_whole_and_nothing_is_stored(reader_client, my_plan):
    bogus = b"m,n,k,dtype,tflops\n8192,8192,8192,bf16,250\n1e308,1e308,1e308,bf16,1\n"
    response = reader_client.post("/api/measurements/", {"kind": "gemm", "plan": my_plan.slug,
                                                         "file": file(GEMM, bogus)}, format="multipart")
    assert response.status_code == 400
    assert "line 3" in response.json()["errors"]["file"][0] and "2,147,483,647" in response.json()["errors"]["file"][0]
    assert not Measurement.objects.exists()


def test_a_stored_row_the_engine_cannot_predict_never_breaks_a_page(reader_client, my_plan, user):
    """A row stored before the bounds (m, n, k of 1e308: the FLOP count overflows) shows no
    prediction instead of answering 500 on the plan page, the validation page and the API."""
    measurement = Measurement.objects.create(
        owner=user, name="old upload", kind="gemm", node_type=my_plan.node_type, plan=my_plan, filename="old.csv",
        provenance={}, fitted={}, rows=[{"m": 1e308, "n": 1e308, "k": 1e308, "dtype": "bf16", "tflops": 1.0},
                                         {"m": 8192, "n": 8192, "k": 8192, "dtype": "bf16", "tflops": 250.0}])
    detail = reader_client.get(f"/api/measurements/{measurement.pk}/")
    assert detail.status_code == 200
    rows = detail.json()["comparison"]["rows"]
    assert rows[0]["predicted_tflops"] is None and rows[1]["predicted_tflops"] > 200
    reader_client.force_login(user)
    assert reader_client.get(f"/plans/{my_plan.slug}/").status_code == 200
    assert reader_client.get("/validation/").status_code == 200


@pytest.mark.parametrize("content, reason", [
    (b"m,n,k,dtype,tflops\n8192,8192,8192,bf16,250\n8192,8192,8192,bf16,1e-320\n", "outside the engine's range"),
    (b"m,n,k,dtype,tflops\n8192,8192,8192,bf16," + b"9" * 140_000 + b"\n", "does not read as CSV"),
])
def test_a_gemm_file_the_engine_cannot_read_is_refused_and_not_stored(reader_client, my_plan, content, reason):
    response = reader_client.post("/api/measurements/", {"kind": "gemm", "plan": my_plan.slug,
                                                         "file": file(GEMM, content)}, format="multipart")
    assert response.status_code == 400 and reason in response.json()["errors"]["file"][0]
    assert not Measurement.objects.exists()


def test_an_nccl_json_report_with_a_nan_rank_is_refused(reader_client):
    report = ('{"args": ["./build/all_reduce_perf"], "config": {"devices": [{"rank": NaN, "hostname": "a", '
              '"device_info": "x"}]}, "results": [{"size": 8, '
              '"out_of_place": {"time": 10, "alg_bw": 0, "bus_bw": 0}}]}')
    path = DATA / "nccl.json"
    response = reader_client.post("/api/measurements/", {"kind": "nccl-tests", "node_type": "dgx-a100",
                                                         "collective": "all_reduce",
                                                         "file": file(path, report.encode())}, format="multipart")
    assert response.status_code == 400 and "rank must be a whole number" in str(response.json()["errors"])
    assert not Measurement.objects.exists()


def test_a_user_past_the_measurements_bound_is_told_to_delete_some(reader_client, my_plan, monkeypatch):
    monkeypatch.setattr("planner.services.measurements.MAX_MEASUREMENTS_PER_USER", 1)
    assert upload(reader_client, NCCL_8, "nccl-tests", plan=my_plan.slug).status_code == 201
    refused = upload(reader_client, NCCL_8, "nccl-tests", plan=my_plan.slug)
    assert refused.status_code == 409 and "delete some first" in refused.json()["errors"]["measurements"][0]
    assert Measurement.objects.filter(owner=my_plan.owner).count() == 1
