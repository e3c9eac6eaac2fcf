"""Seed catalogue: every YAML file passes its schema and the models' rules; loading is idempotent."""
import math
import shutil

import pytest
import yaml

from planner import models
from planner.services.catalog import (
    DATA_DIR,
    TABLES,
    CatalogFileError,
    catalog_load,
    load_schema,
    read_seed_file,
    seed_files,
)

ALL_FILES = [(table, path) for table in TABLES for path in seed_files(table)]


@pytest.mark.parametrize("table,path", ALL_FILES, ids=[f"{t.name}/{p.stem}" for t, p in ALL_FILES])
def test_seed_file_passes_its_schema_and_semantic_rules(table, path):
    document = read_seed_file(path, load_schema(table))
    assert document["slug"] == path.stem
    assert document["description" if table.preset else "source"].strip()
    for key, value in document.items():
        if isinstance(value, float | int) and not isinstance(value, bool):
            assert math.isfinite(value) and value >= 0, key


def test_schemas_name_exactly_the_api_fields():
    """A schema that drifts from the serializer would let seed files and the API disagree."""
    for table in TABLES:
        schema_fields = set(load_schema(table)["properties"])
        serializer_fields = {
            name for name, field in table.serializer().fields.items() if not field.read_only
        }
        assert schema_fields == serializer_fields, table.name


def test_the_seed_holds_the_reference_hardware(catalog):
    expected = {
        models.Accelerator: [
            "a100-pcie-40gb", "a100-pcie-80gb", "a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm5-80gb",
            "h100-pcie-80gb", "h800-sxm5-80gb", "h200-sxm-141gb", "b200-hgx", "ascend-910b3",
        ],
        models.CPU: ["epyc-rome-32c", "epyc-milan-32c", "epyc-7742"],
        models.NIC: ["cx6-hdr-ib", "cx7-ndr-ib"],
        models.Switch: ["qm8700", "qm9700", "tomahawk5-128x400g"],
        models.ComputeNodeType: ["ff-pcie-a100", "dgx-a100", "dgx-h100", "deepseek-h800", "ascend-910b-8card"],
        models.StorageNodeType: ["ff-3fs-storage"],
        models.PriceBook: ["fire-flyer-relative", "usd-2026"],
    }
    for model, slugs in expected.items():
        assert set(slugs) <= set(model.objects.values_list("slug", flat=True)), model.__name__
    assert models.Accelerator.objects.get(slug="ascend-910b3").confidence == "unverified"
    switch = models.Switch.objects.get(slug="tomahawk5-128x400g")
    assert (switch.radix, switch.port_speed_gbit_s, switch.protocol) == (128, 400, "roce")


def test_reference_figures_are_stored_with_units(catalog):
    pcie = models.Accelerator.objects.get(slug="a100-pcie-40gb")
    assert (pcie.peak_tf32_tflops, pcie.peak_fp16_tflops, pcie.tdp_w) == (156, 312, 250)
    node = models.ComputeNodeType.objects.get(slug="ff-pcie-a100")
    assert node.host_memory_practical_bw_gbyte_s == 320
    assert node.root_ports_shared_by_two_gpus == 1
    assert node.gpu_nic_p2p_limit_gbyte_s == pytest.approx(9 * 2**30 / 1e9, rel=0.01)
    storage = models.StorageNodeType.objects.get(slug="ff-3fs-storage")
    assert (storage.ssd_count, storage.nics_per_node) == (16, 2)


def test_unknown_facts_stay_null(catalog):
    assert models.Switch.objects.get(slug="qm8700").power_w is None
    assert models.ComputeNodeType.objects.get(slug="deepseek-h800").cpu is None
    assert models.Accelerator.objects.get(slug="h800-sxm5-80gb").peak_fp64_tflops is None


def table_state():
    rows = {}
    for table in TABLES:
        rows[table.name] = list(table.model.objects.order_by("slug").values())
    rows["items"] = list(models.PriceItem.objects.order_by("id").values())
    return rows


def test_loading_twice_changes_nothing(catalog):
    before = table_state()
    report = catalog_load()
    assert report.created == [] and report.updated == []
    assert report.unchanged == len(ALL_FILES)
    assert table_state() == before


def test_a_changed_file_updates_only_its_entry(catalog, tmp_path):
    data_dir = tmp_path / "data"
    shutil.copytree(DATA_DIR, data_dir)
    path = data_dir / "switches" / "qm8700.yaml"
    document = yaml.safe_load(path.read_text())
    document["notes"] = "edited"
    path.write_text(yaml.safe_dump(document))
    report = catalog_load(data_dir=data_dir)
    assert report.updated == ["switches/qm8700"] and report.created == []
    assert models.Switch.objects.get(slug="qm8700").notes == "edited"


@pytest.mark.parametrize(
    "table_name,slug,change,words",
    [
        ("switches", "qm8700", {"radix": 41}, "multiple of 2"),
        ("switches", "qm8700", {"port_speed_gbit_s": -200}, "less than or equal to the minimum"),
        ("nics", "cx6-hdr-ib", {"colour": "blue"}, "Additional properties"),
        ("compute-node-types", "dgx-a100", {"accelerator": "no-such-gpu"}, "does not exist"),
        ("compute-node-types", "dgx-a100", {"gpu_pci_bus_ids": ["0000:07:00.0", "0000:0f:00.0"]}, "8 distinct PCI"),
        ("compute-node-types", "dgx-h100", {"gpu_pci_bus_ids": ["0000:1B:00.0"]}, "does not match"),
        ("accelerators", "a100-sxm4-40gb", {"scaleup_bw_gbyte_s": None}, "required when"),
    ],
)
def test_a_bad_file_is_refused_and_nothing_changes(table_name, slug, change, words, catalog, tmp_path):
    data_dir = tmp_path / "data"
    shutil.copytree(DATA_DIR, data_dir)
    path = data_dir / table_name / f"{slug}.yaml"
    document = {**yaml.safe_load(path.read_text()), **change}
    path.write_text(yaml.safe_dump(document))
    # A valid edit earlier in load order must be rolled back with the rest.
    first = data_dir / "accelerators" / "a100-pcie-40gb.yaml"
    first.write_text(first.read_text().replace("confidence: datasheet", "confidence: estimate"))
    before = table_state()
    with pytest.raises(CatalogFileError) as raised:
        catalog_load(data_dir=data_dir)
    assert words in str(raised.value.errors)
    assert raised.value.path == path
    assert table_state() == before


def test_load_catalog_command(catalog, capsys):
    from django.core.management import call_command

    call_command("load_catalog")
    assert f"0 created, 0 updated, {len(ALL_FILES)} unchanged" in capsys.readouterr().out


def test_every_preset_names_where_it_writes_checkpoints_and_every_gpu_on_sale_a_rental_rate(catalog):
    """Issue 70, items 3 and 5: a preset with no storage would have no time to train (its checkpoints
    unpriced in time), and a GPU on sale with no on-demand rate could not be rented beside the others."""
    presets = models.ClusterPlan.objects.filter(visibility="shared")
    assert presets.count() == 16
    for plan in presets:
        assert plan.storage_node_count or plan.external_storage_write_gbyte_s, plan.slug
    rated = set(models.PriceItem.objects.filter(price_book__slug="usd-2026", part_kind="gpu-hour", term="on-demand")
                .values_list("part_slug", flat=True))
    gpus = {plan.node_type.accelerator for plan in presets}
    assert {gpu.slug for gpu in gpus if gpu.slug not in rated} == {"rubin"}  # announced: not on sale
    assert all(gpu.confidence == "announced" for gpu in gpus if gpu.slug not in rated)
