"""Store API token keys as SHA-256 digests: existing keys keep working, their plain text is dropped."""
import hashlib

from django.db import migrations, models


def digest_existing_keys(apps, schema_editor):
    AccessToken = apps.get_model("planner", "AccessToken")
    for token in AccessToken.objects.all():
        token.key_digest = hashlib.sha256(token.key.encode()).hexdigest()
        token.prefix = token.key[:8]
        token.save(update_fields=["key_digest", "prefix"])


class Migration(migrations.Migration):

    dependencies = [("planner", "0006_reliability_profiles_and_racks")]

    operations = [
        migrations.AddField("accesstoken", "key_digest", models.CharField(editable=False, max_length=64, null=True)),
        migrations.AddField("accesstoken", "prefix", models.CharField(
            default="", editable=False, help_text="The key's first characters, to tell tokens apart.", max_length=8),
            preserve_default=False),
        migrations.RunPython(digest_existing_keys, migrations.RunPython.noop),
        migrations.RemoveField("accesstoken", "key"),
        migrations.AlterField("accesstoken", "key_digest", models.CharField(editable=False, max_length=64, unique=True)),
    ]
