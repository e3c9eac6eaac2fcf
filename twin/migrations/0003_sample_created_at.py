import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [("twin", "0002_fabric_and_profiles")]

    operations = [
        migrations.AddField(
            model_name="twinsample",
            name="created_at",
            field=models.DateTimeField(auto_now_add=True, db_index=True, default=django.utils.timezone.now),
            preserve_default=False,
        ),
    ]
