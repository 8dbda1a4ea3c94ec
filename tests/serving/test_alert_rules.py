"""deploy/prometheus/: the alert rules and the sample configuration pass promtool's checks, and each rule fires on
the series it is for and stays silent on healthy ones (promtool's rule unit tests, alert_rules_test.yml)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
PROMETHEUS_DIR = REPO / "deploy" / "prometheus"

pytestmark = pytest.mark.skipif(
    shutil.which("promtool") is None,
    reason="promtool (Debian package prometheus) is not installed; .ci/run installs it",
)


def promtool(*args: str, cwd: Path = PROMETHEUS_DIR) -> subprocess.CompletedProcess:
    return subprocess.run(["promtool", *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def test_the_rules_and_the_sample_configuration_are_valid():
    rules = promtool("check", "rules", "alerts.yml")
    assert rules.returncode == 0 and "SUCCESS: 7 rules found" in rules.stdout, rules.stdout + rules.stderr
    config = promtool("check", "config", "prometheus.yml")
    assert config.returncode == 0, config.stdout + config.stderr


def test_each_rule_fires_on_its_series_and_not_on_healthy_ones():
    result = promtool("test", "rules", "alert_rules_test.yml", cwd=Path(__file__).parent)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_broken_rule_fails_the_check(tmp_path):
    """Control: the check reads the file (a rule whose expression does not parse is refused)."""
    broken = tmp_path / "alerts.yml"
    broken.write_text((PROMETHEUS_DIR / "alerts.yml").read_text().replace("> 15 * 60", "> > 15 * 60"))
    assert promtool("check", "rules", str(broken)).returncode != 0
