"""How the evaluation page writes its figures and a job's selection."""

from django import template

register = template.Library()


@register.filter
def figure(value) -> str:
    """A count as it is, a float with 3 decimals, nothing as a dash."""
    if value is None or value == "":
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


@register.filter
def selection_summary(selection: dict) -> str:
    if not selection:
        return ""
    split = selection.get("split", "")
    if split == "validation":
        text = f"validation split ({selection.get('validation_fraction')}, seed {selection.get('split_seed')})"
    else:
        text = "all samples"
    if selection.get("export"):
        text += f" of export {selection['export']}"
    if selection.get("round_name"):
        text += f", round {selection['round_name']}"
    return text
