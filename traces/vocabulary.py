"""Words the studio and its demo data share, kept free of Django so the demo generator can use them."""

# The default error categories of a project (annotators pick one for the first erroneous step).
ERROR_CATEGORIES = (
    "wrong element / grounding",
    "wrong action type",
    "wrong text",
    "premature finish",
    "needless wait or loop",
    "misread screen",
    "misunderstood task",
    "other",
)
