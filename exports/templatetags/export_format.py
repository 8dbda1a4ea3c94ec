from django import template

register = template.Library()


@register.filter
def export_options_summary(options: dict) -> str:
    """The options an export was made with, in words (the list page's Options column)."""
    options = options or {}
    parts = []
    if options.get("include_valid_prefix"):
        parts.append("valid prefix")
    if options.get("include_error_free"):
        parts.append("error-free")
    parts.append(f"validation {options.get('validation_fraction', 0):g}")
    parts.append(f"seed {options.get('split_seed', 0)}")
    if options.get("unparsed_history", "skip") != "skip":
        parts.append(f"unparsed history {options['unparsed_history']}")
    if options.get("since_export") is not None:
        parts.append(f"only new or changed since export {options['since_export']}")
    if options.get("min_gold_accuracy") is not None:
        parts.append(f"annotators below {options['min_gold_accuracy']:.0%} gold accuracy left out")
    known = {
        "min_gold_accuracy",
        "include_valid_prefix",
        "include_error_free",
        "validation_fraction",
        "split_seed",
        "unparsed_history",
        "since_export",
    }
    extra = sorted(set(options) - known)
    parts += [f"{name} {options[name]}" for name in extra]
    return " · ".join(parts)


@register.filter
def sample_total(counts: dict) -> int | None:
    by_kind = (counts or {}).get("by_kind")
    return sum(by_kind.values()) if by_kind is not None else None
