"""Each GPU-hour price names who rents at it (issue 70, item 3). Rows stored before this name their
provider only in their basis, and say so."""
from django.db import migrations, models

STATED_IN_BASIS = "as its basis says"


def name_existing_providers(apps, schema_editor):
    apps.get_model("planner", "PriceItem").objects.filter(part_kind="gpu-hour", provider="").update(
        provider=STATED_IN_BASIS)


class Migration(migrations.Migration):

    dependencies = [
        ('planner', '0042_tracereads'),
    ]

    operations = [
        migrations.AddField(
            model_name='priceitem',
            name='provider',
            field=models.CharField(blank=True, default='', help_text='Who rents at this GPU-hour price (a cloud or GPU provider; an estimate names what it is derived from). Required for GPU-hour rows.', max_length=200),
        ),
        migrations.RunPython(name_existing_providers, migrations.RunPython.noop),
    ]
