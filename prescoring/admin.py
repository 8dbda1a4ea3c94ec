from django.contrib import admin

from prescoring.models import PrescoreJob
from studio.admin import JobAdmin

admin.site.register(PrescoreJob, JobAdmin)
