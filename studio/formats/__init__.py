"""Dates and numbers on the pages in each language's own way (Django's ``FORMAT_MODULE_PATH``): where a language has
no module here, Django's own formats for it (Simplified Chinese: "2026年12月7日 15:04")."""
