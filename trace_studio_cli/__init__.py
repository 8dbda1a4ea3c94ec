"""`trace-studio`: the engineers' command line, a client of the studio's REST API (no Django inside)."""
