"""The one marker for a text declared where no request is (a table, a registry): ``gettext_noop`` puts it in the
catalog (``makemessages`` finds it by this name) and leaves it as written; whoever shows it translates it then, in
the request's language (``gettext(text)``, ``{% translate text %}``). Not Django's own: this module is read without
Django's settings too (the command line, the architecture tests)."""


def gettext_noop(text: str) -> str:
    return text
