"""The lead's review: decisions (services), what a lead reads (selectors), its API and pages."""
