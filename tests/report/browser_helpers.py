"""What the dashboard tests type into the page and read out of it (a module of its own:
importing from conftest resolves to whichever test folder's conftest was imported first)."""

import json
import re
from pathlib import Path

# Sets a <select>'s value and fires its change event, as a person picking an option does.
SET = (
    "(() => {{ const s = document.getElementById('{id}'); s.value = {value!r}; "
    "s.dispatchEvent(new Event('change')); }})()"
)


def embedded(index: Path) -> dict:
    """The data a dashboard page holds (its ``imx-data`` script element)."""
    blob = re.search(r'<script id="imx-data" type="application/json">(.*?)</script>',
                     Path(index).read_text(), re.S)
    assert blob, "no embedded data"
    return json.loads(blob.group(1))
