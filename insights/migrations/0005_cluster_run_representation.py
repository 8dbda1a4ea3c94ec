from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("insights", "0004_search_entry_agreement"),
    ]

    operations = [
        migrations.AddField(
            model_name="clusterrun",
            name="model_path",
            field=models.CharField(
                blank=True,
                help_text="The checkpoint whose embeddings were compared (representation: model).",
                max_length=500,
            ),
        ),
        migrations.AddField(
            model_name="clusterrun",
            name="representation",
            field=models.CharField(
                choices=[("tfidf", "TF-IDF"), ("model", "model embeddings")],
                default="tfidf",
                help_text="What the texts were compared by: TF-IDF vectors, or the model's embeddings.",
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="clusterrun",
            name="method",
            field=models.CharField(blank=True, help_text="How the text was clustered.", max_length=120),
        ),
    ]
