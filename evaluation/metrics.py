"""The figures of a checkpoint evaluation, from its stored rows (pure: no database).

* preference accuracy: the share of pairs whose corrected step is more likely than the recorded wrong one at s_τ,
  ``loglik_sum(corrected) > loglik_sum(recorded)`` (a tie counts as not preferred);
* mean margin: the mean of ``loglik_sum(corrected) - loglik_sum(recorded)`` over the pairs (nats);
* NLL per token of the corrected targets (error_correction) and of the post-reflection targets: the summed negative
  log-likelihood over the summed token counts (every token weighs the same, whatever its sample's length).

Overall, by error category and by round. A figure with no sample behind it is None.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

NO_CATEGORY = "(no category)"
NO_ROUND = "(no round)"


@dataclass(frozen=True)
class ScoredRow:
    kind: str
    category: str
    round_name: str
    loglik_sum: float
    n_tokens: int
    rejected_loglik_sum: float | None = None
    rejected_n_tokens: int | None = None


def figures(rows: Iterable[ScoredRow]) -> dict:
    rows = list(rows)
    pairs = [r for r in rows if r.kind == "dpo" and r.rejected_loglik_sum is not None]
    margins = [r.loglik_sum - r.rejected_loglik_sum for r in pairs]  # type: ignore[operator]
    out: dict = {
        "samples": len(rows),
        "pairs": len(pairs),
        "preference_accuracy": sum(m > 0 for m in margins) / len(margins) if margins else None,
        "mean_margin": sum(margins) / len(margins) if margins else None,
    }
    for kind, name in (("error_correction", "corrected"), ("post_reflection", "post_reflection")):
        scored = [r for r in rows if r.kind == kind]
        tokens = sum(r.n_tokens for r in scored)
        out[name] = len(scored)
        out[f"{name}_tokens"] = tokens
        out[f"nll_{name}"] = -sum(r.loglik_sum for r in scored) / tokens if tokens else None
    return out


def summarize(rows: Iterable[ScoredRow]) -> dict:
    """``{"overall": figures, "by_category": {category: figures}, "by_round": {round: figures}}``, groups sorted."""
    rows = list(rows)
    by_category: dict[str, list[ScoredRow]] = {}
    by_round: dict[str, list[ScoredRow]] = {}
    for row in rows:
        by_category.setdefault(row.category or NO_CATEGORY, []).append(row)
        by_round.setdefault(row.round_name or NO_ROUND, []).append(row)
    return {
        "overall": figures(rows),
        "by_category": {name: figures(group) for name, group in sorted(by_category.items())},
        "by_round": {name: figures(group) for name, group in sorted(by_round.items())},
    }
