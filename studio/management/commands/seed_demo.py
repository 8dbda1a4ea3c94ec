from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

if TYPE_CHECKING:
    from django.core.management.base import CommandParser


class Command(BaseCommand):
    help = "Create the demo users (annotator, lead, engineer), projects and generated traces. Demo mode only."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, seed: int, **options: Any) -> None:
        if settings.STUDIO_MODE != "demo" or not settings.DEMO_PASSWORD:
            raise CommandError(
                "seed_demo runs only with STUDIO_MODE=demo and STUDIO_DEMO_PASSWORD set (make demo does both)"
            )
        try:
            from demo.seed import demo_seed
        except ImportError as exc:  # the demo generator is not part of the installed package
            raise CommandError(f"the demo package is not available here ({exc}); run from a source checkout") from None
        demo_seed(password=settings.DEMO_PASSWORD, seed=seed, stdout=self.stdout)
