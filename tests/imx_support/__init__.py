"""Test-support code shared by the tests and scripts/ (not part of the package): synthetic
results (``synthetic``) and a headless Chromium driven over the DevTools protocol
(``headless``). tests/ is on the import path under pytest (its conftest is no package's);
scripts add it themselves."""
