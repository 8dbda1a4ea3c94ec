"""Quality control of the workforce: gold traces (a lead's accepted answer as the reference of its trace), gold
answers mixed into each annotator's queue and scored at submit, the qualification set a new member passes before the
real queue opens, each annotator's quality figures and flags, and paused queues.

Rooms: ``scoring`` (pure: the one comparison with a reference, the Wilson interval), ``services`` (writes),
``selectors`` (reads: settings, the dashboard, feedback, the qualification's state), ``rollup`` (the dashboard's
counts per annotator and day, kept as answers and scores change, and their recount), ``api`` (+ ``api_urls``).
The models live in ``annotation.models``."""
