"""The report pages' stylesheet and scripts, read from the asset files beside this module.

``assets/style.css`` styles every page (dashboard, agentic.html, catalog.html); ``assets/theme.js``
is the light/dark switch every page carries; ``assets/dashboard.js`` draws the dashboard from the
JSON embedded in ``<script id="imx-data">`` (see dashboard.py). They are inlined into each page
(no network: it works from file:// and GitHub Pages) and ship as package data (pyproject.toml).
"""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def asset(name: str) -> str:
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


CSS = asset("style.css")
THEME_JS = asset("theme.js")
# One script: strict mode for all of it, the theme set before anything is drawn.
JS = '"use strict";\n' + THEME_JS + asset("dashboard.js")
