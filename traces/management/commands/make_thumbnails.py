"""``manage.py make_thumbnails``: make the thumbnails of screenshots imported before imports made them.

Pages never decode a screenshot: until its thumbnail exists, a page gets the image itself and
asks a worker for the thumbnail. This makes all that remain at once, a few side by side (IMPORT_WRITE_THREADS).
Safe to run again, and beside running workers: a thumbnail is made once, by content hash.
"""

from django.core.management.base import BaseCommand

from traces import services


class Command(BaseCommand):
    help = "Make the missing screenshot thumbnails (of screenshots imported before imports made them)."

    def handle(self, *args, **options):
        made = failed = 0
        for shot, problem in services.screenshots_thumbnails_make():
            if problem is None:
                made += 1
            else:
                failed += 1
                self.stderr.write(f"{shot.sha256[:12]}: {problem}")
                self.stdout.write(f"failed: {shot.sha256[:12]} ({problem})")
        self.stdout.write(f"{made} thumbnails made, {failed} failed")
