"""What the dashboard browser tests type into the page (a module of its own: importing from
conftest resolves to whichever test folder's conftest was imported first)."""

# Sets a <select>'s value and fires its change event, as a person picking an option does.
SET = (
    "(() => {{ const s = document.getElementById('{id}'); s.value = {value!r}; "
    "s.dispatchEvent(new Event('change')); }})()"
)
