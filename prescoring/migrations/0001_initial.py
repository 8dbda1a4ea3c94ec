"""The pre-scoring models move here from the traces app: pre-scoring is its own app.

Their tables keep their names (each model's Meta.db_table), so this migration changes Django's state only: the
database already holds the tables, created by traces 0002 and altered by traces 0003. traces 0014 removes the
models from the traces app's state; 0002 here renames their content types and the job label of their shards.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('traces', '0013_import_plan'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
        migrations.CreateModel(
            name='PrescoreJob',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], db_index=True, default='queued', max_length=16)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('progress_done', models.PositiveIntegerField(default=0)),
                ('progress_total', models.PositiveIntegerField(default=0)),
                ('cancel_requested', models.BooleanField(default=False)),
                ('attempts', models.PositiveSmallIntegerField(default=0)),
                ('heartbeat_at', models.DateTimeField(blank=True, help_text='Last sign of life of the worker running it.', null=True)),
                ('message', models.TextField(blank=True, help_text='Failure reason or final summary, for people.')),
                ('errors', models.JSONField(blank=True, default=list, help_text='Per-item problems that did not stop the job.')),
                ('scorer', models.CharField(choices=[('rules', 'Rule checks'), ('qwen2vl', 'Qwen2-VL model')], max_length=16)),
                ('model_path', models.CharField(blank=True, help_text='Local checkpoint directory (qwen2vl).', max_length=500)),
                ('model_name', models.CharField(blank=True, max_length=200)),
                ('weights_hash', models.CharField(blank=True, help_text='sha256 of the weight files.', max_length=64)),
                ('settings', models.JSONField(blank=True, default=dict)),
                ('trace_ids', models.JSONField(blank=True, default=list, help_text='Traces to score; empty: the whole project.')),
                ('steps_scored', models.PositiveIntegerField(default=0)),
                ('steps_failed', models.PositiveIntegerField(default=0)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='prescore_jobs', to='traces.project')),
            ],
            options={
                'db_table': 'traces_prescorejob',
                'ordering': ['-created_at'],
                'abstract': False,
            },
        ),
        migrations.CreateModel(
            name='StepSuggestion',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('scorer', models.CharField(choices=[('rules', 'Rule checks'), ('qwen2vl', 'Qwen2-VL model')], max_length=16)),
                ('model_name', models.CharField(blank=True, max_length=200)),
                ('weights_hash', models.CharField(blank=True, max_length=64)),
                ('settings', models.JSONField(blank=True, default=dict)),
                ('flags', models.JSONField(blank=True, default=list, help_text='Rule flags: [{code, message, ...}].')),
                ('loglik_sum', models.FloatField(blank=True, null=True)),
                ('loglik_mean', models.FloatField(blank=True, null=True)),
                ('n_tokens', models.PositiveIntegerField(blank=True, null=True)),
                ('model_action', models.TextField(blank=True, help_text="The model's own greedy reply.")),
                ('model_action_parsed', models.JSONField(blank=True, default=list)),
                ('agrees', models.BooleanField(blank=True, null=True)),
                ('click_distance', models.FloatField(blank=True, help_text='Distance / screen diagonal.', null=True)),
                ('suspicion', models.FloatField(default=0.0)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('job', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='step_suggestions', to='prescoring.prescorejob')),
                ('step', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='suggestions', to='traces.step')),
            ],
            options={
                'db_table': 'traces_stepsuggestion',
                'ordering': ['step_id', '-created_at'],
                'constraints': [models.UniqueConstraint(fields=('job', 'step'), name='unique_step_suggestion_per_job')],
            },
        ),
        migrations.CreateModel(
            name='TraceSuggestion',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('scorer', models.CharField(choices=[('rules', 'Rule checks'), ('qwen2vl', 'Qwen2-VL model')], max_length=16)),
                ('model_name', models.CharField(blank=True, max_length=200)),
                ('weights_hash', models.CharField(blank=True, max_length=64)),
                ('suggested_tau', models.PositiveIntegerField(blank=True, help_text='Most likely first erroneous step.', null=True)),
                ('tau_probability', models.FloatField(default=0.0)),
                ('no_error_probability', models.FloatField(default=1.0)),
                ('max_suspicion', models.FloatField(default=0.0)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('job', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='trace_suggestions', to='prescoring.prescorejob')),
                ('trace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='suggestions', to='traces.trace')),
            ],
            options={
                'db_table': 'traces_tracesuggestion',
                'ordering': ['trace_id', '-created_at'],
                'indexes': [models.Index(fields=['trace', 'scorer', 'created_at'], name='traces_trac_trace_i_bd49e7_idx')],
                'constraints': [models.UniqueConstraint(fields=('job', 'trace'), name='unique_trace_suggestion_per_job')],
            },
        ),
            ],
        ),
    ]
