"""Issue 56 items 4 and 5: creates racing for one name answer 409 naming the field, never a 500; odd
input (lone surrogates, booleans for numbers, numbers past any float) answers 400 naming the field."""
import json
import os
import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from rest_framework.test import APIClient

from planner.api.errors import unique_violation_field
from planner.models import AccessToken, ClusterPlan, PriceBook, Workload
from planner.services.accounts import token_issue

POSTGRES = os.environ.get("DATABASE_URL", "").startswith("postgres")
FF = "ff2-pcie-2zone"
WORKLOAD = {"slug": "raced", "name": "Raced", "kind": "transformer", "layers": 4, "hidden": 1024, "heads": 16,
            "vocab": 32000, "seq_len": 2048, "global_batch": 64}

BOOK = {"slug": "raced-book", "name": "B", "vendor": "x", "source": "quotes", "confidence": "secondary",
        "currency": "USD", "price_date": "2026-11-01"}


def test_a_unique_violation_names_its_field(catalog, user):
    plan = ClusterPlan.objects.get(slug=FF)
    with pytest.raises(IntegrityError) as raised, transaction.atomic():
        ClusterPlan.objects.create(**{f.name: getattr(plan, f.name) for f in ClusterPlan._meta.concrete_fields
                                      if not f.primary_key})
    assert unique_violation_field(raised.value) == "slug"
    AccessToken.objects.create(user=user, name="nightly", key_digest="a" * 64)
    with pytest.raises(IntegrityError) as raised, transaction.atomic():
        AccessToken.objects.create(user=user, name="nightly", key_digest="b" * 64)
    assert unique_violation_field(raised.value) == "name"  # the name, not its owner


@pytest.mark.skipif(not POSTGRES, reason="the race needs PostgreSQL's concurrent transactions; CI sets DATABASE_URL")
@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # threads see committed rows; the seed returns
@pytest.mark.parametrize("what", ["workload", "clone", "token", "book", "book-copy"])
def test_six_creates_of_one_name_at_once_make_one_and_answer_409_to_the_rest(what, monkeypatch):
    """Six requests (from two users) create one slug or token name at the same moment: each passes the
    serializer's uniqueness check before any inserts (a barrier in save holds them there), one is
    made and the other five answer 409 (or 400 where the service's own check saw the first) naming
    the field."""
    users = [get_user_model().objects.create_user(f"racer-{i}", password="pw-racer-1234") for i in range(2)]
    tokens = [token_issue(u) for u in users]
    barrier, held = threading.Barrier(6, timeout=10), threading.local()
    for model in (Workload, ClusterPlan, AccessToken, PriceBook):
        save = model.save

        def held_save(self, *args, _save=save, **kwargs):
            if self._state.adding and not getattr(held, "once", False):  # each request's first insert
                held.once = True
                barrier.wait()
            return _save(self, *args, **kwargs)

        monkeypatch.setattr(model, "save", held_save)

    def create(i):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {tokens[i % 2 if what != 'token' else 0]}")
        try:
            if what == "workload":
                return client.post("/api/workloads/", WORKLOAD, format="json")
            if what == "clone":
                return client.post(f"/api/plans/{FF}/clone/", {"slug": "raced-clone"}, format="json")
            if what == "book":
                return client.post("/api/catalog/price-books/", BOOK, format="json")
            if what == "book-copy":
                return client.post("/api/catalog/price-books/fire-flyer-relative/copy/", {"slug": "raced-book"},
                                   format="json")
            return client.post("/api/tokens/", {"name": "raced"}, format="json")
        finally:
            connection.close()

    answers = [None] * 6
    threads = [threading.Thread(target=lambda i=i: answers.__setitem__(i, create(i))) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    codes = sorted(response.status_code for response in answers)
    assert codes[0] == 201 and set(codes[1:]) <= {400, 409}, [(r.status_code, r.content[:200]) for r in answers]
    field = "name" if what == "token" else "slug"
    for conflict in (response for response in answers if response.status_code != 201):
        assert conflict["Content-Type"].startswith("application/") and field in conflict.json()["errors"]
    if 409 in codes:
        conflict = next(response for response in answers if response.status_code == 409)
        assert "at the same moment" in conflict.json()["errors"][field][0]


def post_json(client, path, body, method="post"):
    """A body sent as JSON text with ASCII escapes, as a script would send "\\ud800"."""
    return getattr(client, method)(path, data=json.dumps(body), content_type="application/json")


PLAN = {"slug": "mine", "name": "Mine", "node_type": "ff-pcie-a100", "node_count": 64, "switch": "qm8700",
        "price_book": "fire-flyer-relative"}


@pytest.mark.parametrize("path, body, field", [
    ("/api/plans/", {**PLAN, "node_type": "\ud800"}, "node_type"),
    ("/api/plans/", {**PLAN, "switch": "qm\udfff8700"}, "switch"),
    ("/api/plans/", {**PLAN, "price_book": "\ud800"}, "price_book"),
    ("/api/workloads/", {**WORKLOAD, "kind": "\ud800"}, "kind"),
    ("/api/workloads/preview/", {"workload": {**WORKLOAD, "kind": "\ud800"}, "plan": FF}, "workload.kind"),
    ("/api/catalog/price-books/fire-flyer-relative/copy/", {"slug": "s", "items": [{"part_kind": "\ud800"}]},
     "items.0.part_kind"),
])
def test_a_lone_surrogate_anywhere_is_a_400_naming_its_field(path, body, field, catalog, reader_client):
    response = post_json(reader_client, path, body)
    assert response.status_code == 400, response.content[:300]
    assert "lone UTF-16 surrogate" in response.json()["errors"][field][0]
    patched = post_json(reader_client, f"/api/plans/{FF}/", {"node_type": "\ud800"}, method="patch")
    assert patched.status_code in (400, 403)  # never a 500: a shared preset is not the reader's to change
    valid_pair = post_json(reader_client, "/api/workloads/", {**WORKLOAD, "name": "Raced \U0001f600"})
    assert valid_pair.status_code == 201  # a surrogate pair is one character, and text


def test_a_boolean_is_not_a_number_and_a_huge_integer_is_out_of_range(catalog, reader_client):
    site = {"facility": {"power_mw": True, "floor_racks": 400, "rack_power_kw": 130, "cooling": "liquid",
                         "hall": "hyperscale"}, "goal": {"workload": "llama3-70b-class-1152"}}
    response = post_json(reader_client, "/api/sweeps/site/", site)
    assert response.status_code == 400 and "not true or false" in response.json()["errors"]["facility"]["power_mw"][0]
    twin = post_json(reader_client, "/api/twins/", {"plan": FF, "seed": 3})
    assert twin.status_code == 201, twin.content[:300]
    url = f"/api/twins/{twin.json()['id']}/speed/"
    for speed in (10**30, 2**64, 10**400, True):
        response = post_json(reader_client, url, {"speed": speed})
        assert response.status_code == 400 and "speed" in response.json()["errors"], (speed, response.content[:200])
    created = post_json(reader_client, "/api/twins/", {"plan": FF, "seed": 3, "speed": 2**64})
    assert created.status_code == 400 and "speed" in created.json()["errors"]
