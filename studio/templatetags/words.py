"""`{{ n|in_words:"trace,traces" }}`: studio.words.in_words asked from a template, so a page's counts follow the one
singular/plural rule ("1 trace") instead of a hard-coded plural ("1 traces")."""

from django import template

from studio import words

register = template.Library()


@register.filter
def in_words(count, names: str) -> str:
    singular, plural = names.split(",")
    return words.in_words(int(count), singular, plural)
