"""Price books as a buyer works with them: their own copy of a shared book, their quotes in it, and
how old a book's prices are."""
import datetime

from django.db import transaction

from planner.models import ClusterPlan, PriceBook, PriceItem

# A book whose prices are older than this is flagged on every plan priced from it.
STALE_AFTER_DAYS = 365


@transaction.atomic
def put_item(*, book: PriceBook, part_kind: str, part_slug: str, **fields) -> PriceItem:
    """Add the book's price for a part, or replace the one it has."""
    item, _ = PriceItem.objects.update_or_create(price_book=book, part_kind=part_kind, part_slug=part_slug,
                                                 defaults=fields)
    book.save(update_fields=["updated_at"])
    return item


@transaction.atomic
def copy_book(*, book: PriceBook, owner, slug: str, name: str | None = None,
              plan: ClusterPlan | None = None) -> PriceBook:
    """``book`` with its items as ``owner``'s own (its date, currency, energy price and PUE kept);
    with ``plan``, that plan is priced from the copy."""
    items = list(book.items.all())
    copy = PriceBook.objects.create(
        slug=slug, name=name or f"{book.name} (your quotes)", vendor=book.vendor, owner=owner,
        source=f"copied from the price book '{book.slug}' ({book.source})", confidence=book.confidence,
        notes=book.notes, currency=book.currency, price_date=book.price_date,
        energy_price_per_kwh=book.energy_price_per_kwh, pue=book.pue)
    PriceItem.objects.bulk_create(
        PriceItem(price_book=copy, part_kind=item.part_kind, part_slug=item.part_slug, unit_price=item.unit_price,
                  basis=item.basis, confidence=item.confidence, price_date=item.price_date or book.price_date,
                  source_url=item.source_url) for item in items)
    if plan is not None:  # the plan's row locked, as every plan write is
        plan = ClusterPlan.objects.select_for_update().get(pk=plan.pk)
        plan.price_book, plan.version = copy, plan.version + 1
        plan.full_clean()
        plan.save()
    return copy


def staleness(book: PriceBook, today: datetime.date | None = None) -> str | None:
    """A sentence when the book's prices are more than a year old on ``today``, else None (and None
    for relative units, a paper's ratios rather than market prices)."""
    if book.currency == "REL":
        return None
    today = today or datetime.date.today()
    age_days = (today - book.price_date).days
    if age_days <= STALE_AFTER_DAYS:
        return None
    return (f"cost: the price book '{book.slug}' is dated {book.price_date.isoformat()}, {age_days // 30} months "
            "ago: its prices may no longer hold; check them against a current quote")
