"""The pre-scoring models (PrescoreJob, StepSuggestion, TraceSuggestion) leave the traces app's state: they are
the prescoring app's now (prescoring 0001), over the same tables. Nothing in the database changes."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0013_import_plan"),
        ("prescoring", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.RemoveField(model_name="tracesuggestion", name="job"),
                migrations.RemoveField(model_name="stepsuggestion", name="job"),
                migrations.RemoveField(model_name="stepsuggestion", name="step"),
                migrations.RemoveField(model_name="tracesuggestion", name="trace"),
                migrations.DeleteModel(name="PrescoreJob"),
                migrations.DeleteModel(name="StepSuggestion"),
                migrations.DeleteModel(name="TraceSuggestion"),
            ],
        ),
    ]
