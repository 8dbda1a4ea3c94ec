"""Demo data the studio generates itself: Pillow-rendered screens and scripted UI-TARS traces over them.

Outside the product apps (not in INSTALLED_APPS, not in the installed package): only `make demo` and the tests use
it. Pure Python + Pillow except :mod:`demo.seed`, which loads the demo world through the studio's services.

- :mod:`demo.screens`: renderers by screen family (desktop, web, phone);
- :mod:`demo.scripts`: the scripted traces (:func:`~demo.scripts.build_scripts`);
- :mod:`demo.generate`: :func:`~demo.generate.write_demo_traces` writes them in the native format;
- :mod:`demo.seed`: :func:`~demo.seed.demo_seed`, the users, projects, traces and accepted annotations of `make demo`.
"""
