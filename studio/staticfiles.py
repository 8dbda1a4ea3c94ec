"""Static files in production: hashed names from the manifest, also inside the page's JavaScript modules."""

from __future__ import annotations

from django.contrib.staticfiles.apps import StaticFilesConfig
from whitenoise.storage import CompressedManifestStaticFilesStorage


class StudioStaticFilesStorage(CompressedManifestStaticFilesStorage):
    """WhiteNoise's compressed manifest storage that also rewrites ES module imports.

    The workspace and review pages load native modules (``<script type="module">``, static/js/), which import each
    other by relative path (``import { toPx } from "./lib/geometry.js";``). Every file gets a hashed name, so an
    import must name the hashed file too, or a browser would load the unhashed one (absent from the manifest's
    far-future caching, stale after a deploy). Django rewrites ``import … from "…";`` / ``export … from "…";``
    specifiers when asked to; an import must therefore be a relative path and end with a semicolon
    (tests/serving/test_static_production.py follows every import of the collected entry modules)."""

    support_js_module_import_aggregation = True


class StudioStaticFilesConfig(StaticFilesConfig):
    """``django.contrib.staticfiles``, leaving out static/js/package.json: it only tells Node (the unit tests in
    tests/js/) that the page's scripts are ES modules, and is no file a page loads."""

    ignore_patterns = [*StaticFilesConfig.ignore_patterns, "package.json"]
