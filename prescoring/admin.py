from django.contrib import admin

from prescoring.models import PrescoreJob
from traces.admin import JobAdmin

admin.site.register(PrescoreJob, JobAdmin)
