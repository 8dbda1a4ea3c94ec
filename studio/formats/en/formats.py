"""English dates as the page scripts write them (``Intl.DateTimeFormat("en", {dateStyle: "medium", timeStyle:
"short"})``, static/js/i18n.js), so a date reads alike whether the server or a script wrote it: "Dec 7, 2026, 3:04 PM".
"""

DATE_FORMAT = "M j, Y"
DATETIME_FORMAT = "M j, Y, g:i A"
