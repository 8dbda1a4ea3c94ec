"""Demo data the studio generates itself: Pillow-rendered screens and scripted UI-TARS traces over them.

Pure Python + Pillow (no Django imports), so it can be used and tested without a database.

- :mod:`traces.demo.screens`: renderers ``render_settings``, ``render_files``, ``render_web``, ``render_phone``;
  each takes a small state dict and returns a :class:`~traces.demo.screens.Screen` (image + named widget boxes).
- :mod:`traces.demo.scripts`: the scripted traces (:func:`~traces.demo.scripts.build_scripts`).
- :mod:`traces.demo.generate`: :func:`~traces.demo.generate.write_demo_traces` writes them in the native format.
"""
