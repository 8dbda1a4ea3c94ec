"""axe-core, the accessibility checker the browser tests run in a page (tests/annotation/test_browser_accessibility.py):
its version pinned in ``tests/axe/package.json``, installed once with npm into ``var/axe-core`` (tests/npm_packages.py).

    python -m tests.axe_core    # installs it if needed, prints the folder
"""

from __future__ import annotations

from pathlib import Path

from tests.installs import installs_dir
from tests.npm_packages import NpmInstallError, npm_ensure

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "tests" / "axe" / "package.json"
INSTALL = installs_dir() / "axe-core"

# What fails a page: axe's two worst impacts (WCAG 2.1 A and AA rules and axe's best practices).
FAILING_IMPACTS = ("critical", "serious")
RULE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]

__all__ = ["NpmInstallError", "axe_source", "page_violations"]


def axe_source() -> str:
    """axe.min.js, installed first if needed."""
    return (npm_ensure(PACKAGE, INSTALL) / "node_modules" / "axe-core" / "axe.min.js").read_text(encoding="utf-8")


def page_violations(page, source: str) -> list[str]:
    """The critical and serious findings of axe on ``page`` as it is now, one line each: the rule, its impact, the
    page's path and the first elements it names. The page's context must bypass its Content-Security-Policy
    (``bypass_csp=True``): axe is put in as a script of the page."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(content=source)
    found = page.evaluate(
        """async (tags) => {
            const result = await axe.run(document, { runOnly: { type: "tag", values: tags }, resultTypes: ["violations"] });
            return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help,
                targets: v.nodes.slice(0, 3).map((n) => n.target.join(" ") + (n.failureSummary ? " — " + n.failureSummary.split("\\n").slice(1, 2).join("") : "")) }));
        }""",
        RULE_TAGS,
    )
    path = page.evaluate("() => location.pathname + location.search")
    return [
        f"{path}: {v['id']} ({v['impact']}): {v['help']}: {'; '.join(v['targets'])}"
        for v in found
        if v["impact"] in FAILING_IMPACTS
    ]


if __name__ == "__main__":
    print(npm_ensure(PACKAGE, INSTALL))
