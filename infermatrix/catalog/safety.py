"""What a value must look like before it may reach a shell script, an #SBATCH line, an ssh
command line or a file path.

Checked where the value enters (catalog load, a job file, a command-line flag), so everything
downstream can trust it; the writers still quote what they write. One module, so the rules
for a host, a SLURM name or an id are the same everywhere.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator

from .placeholders import NAME as PLACEHOLDER_NAME

# C0 and C1 controls, DEL and the Unicode line/paragraph separators: nothing a config needs,
# and a newline in a generated script starts a new command.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# ids that name files and folders (run ids, job ids, recipe path segments)
SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,199}")
# a host name, IPv4 or IPv6 address: never starting with '-' (ssh would read an option)
HOST = re.compile(r"[A-Za-z0-9_:][A-Za-z0-9._:-]{0,252}")
# a SLURM node name or hostlist expression (node[01-04,07])
NODE_LIST = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._,\[\]-]{0,1023}")
# a SLURM partition or account (a comma-separated list of partitions is allowed)
SLURM_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._,+-]{0,255}")
# one extra salloc/sbatch option: --name or --name=value; the value is written in double
# quotes on an #SBATCH line, so it may hold no quote or backslash
SLURM_ARG = re.compile(r"--?[A-Za-z][A-Za-z0-9-]*(=[^\"\\]*)?")
USER = re.compile(r"[A-Za-z_][A-Za-z0-9._-]{0,63}")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
# a container image: registry/name:tag@digest, a Pyxis "registry#name", or a squashfs file;
# never starting with '-' (docker and srun would read an option: --privileged)
IMAGE = re.compile(r"[A-Za-z0-9/][A-Za-z0-9._/:@#+-]{0,511}")
# a ${NAME} placeholder bound at launch
_PLACEHOLDER = rf"\$\{{{PLACEHOLDER_NAME}\}}"  # the braced form of placeholders.py's syntax
# a mount's host or container path: absolute (or a ${NAME} bound at launch), without ',' or
# ':' (they separate entries and fields of --container-mounts and docker -v) or white space
MOUNT_PATH = re.compile(rf"(/|{_PLACEHOLDER})[^,:\s]{{0,4095}}")
BOUND_MOUNT = re.compile(r"/[^,:\s]{0,4095}")
ABS_PATH = re.compile(r"/[^\x00]{0,4095}")
# a file or folder path: never starting with '-' (or white space)
PATH = re.compile(r"[^-\s][^\x00]{0,4095}")
# a word handed to a program as a value (a docker --ipc mode, a router policy, a checkpoint):
# no white space, never starting with '-'
WORD = re.compile(r"[^-\s]\S{0,1023}")
# a web link shown on the catalog page: http(s) only, nothing that ends a link or starts markup
WEB_URL = re.compile(r"https?://[^\s<>\"'`\\]{1,2000}")
# a file inside the catalog, relative to its root: no leading '/', no '..' segment, no '-'
CATALOG_PATH = re.compile(r"(?!/)(?!-)(?!(?:.*/)?\.\.(?:/|$))[^\x00]{1,1024}")
# a docker option name (written --name=value when listed in `equals`)
OPTION_NAME = re.compile(r"[a-z][a-z0-9-]{0,63}")


class UnsafeValue(ValueError):
    """A value that may not reach a script, a command line or a path."""


def check_text(value: str, what: str = "value") -> str:
    """``value`` unchanged when it holds no control character (newline, tab, ESC, ...)."""
    bad = CONTROL.search(value)
    if bad:
        raise UnsafeValue(f"{what} holds a control character ({bad.group()!r}); "
                          "newlines and other control characters are not allowed")
    return value


def _matching(pattern: re.Pattern[str], value: str, what: str, shape: str) -> str:
    check_text(value, what)
    if not pattern.fullmatch(value):
        raise UnsafeValue(f"{what} {value[:80]!r} is not {shape}")
    return value


def safe_id(value: str, what: str = "id") -> str:
    """An id that names a file or folder: letters, digits and ``._+-``, not starting with a
    dot or dash, so it never climbs out of its folder (``../..``) or hides."""
    return _matching(SAFE_ID, value, what, "a safe file name (letters, digits, '._+-', not "
                     "starting with '.' or '-', at most 200 characters)")


def safe_host(value: str, what: str = "host") -> str:
    return _matching(HOST, value, what, "a host name or address (letters, digits, '._:-', "
                     "not starting with '-')")


def safe_mount(value: str, what: str = "mount path") -> str:
    """A mount path once its placeholders are bound: absolute, no ',' ':' or white space
    (a bound value could otherwise add a mount: '/data,/:/hostroot')."""
    return _matching(BOUND_MOUNT, value, what, "an absolute path without ',', ':' or spaces")


def no_controls(value: Any, what: str = "value") -> Any:
    """Every string in a YAML-shaped value (keys too) free of control characters."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            check_text(item, what)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return value


def _pattern_type(pattern: re.Pattern[str], shape: str) -> Any:
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError(f"{value[:80]!r} is not {shape}")
        return value

    return Annotated[str, AfterValidator(lambda v: check(check_text(v)))]


# pydantic field types for the catalog schema
Host = _pattern_type(HOST, "a host name or address (letters, digits, '._:-', not starting with '-')")
NodeList = _pattern_type(NODE_LIST, "a node name or hostlist (letters, digits, '._,[]-')")
SlurmName = _pattern_type(SLURM_NAME, "a SLURM name (letters, digits, '._,+-')")
SlurmArg = _pattern_type(SLURM_ARG, "an option like --qos=high (no quotes or backslashes)")
UserName = _pattern_type(USER, "a user name")
EnvName = _pattern_type(ENV_NAME, "an environment variable name (letters, digits, '_', not "
                        "starting with a digit)")
ImageRef = _pattern_type(IMAGE, "a container image reference (letters, digits, '._/:@#+-', "
                         "not starting with '-')")
MountPath = _pattern_type(MOUNT_PATH, "an absolute path (or ${NAME}) without ',', ':' or spaces")
AbsPath = _pattern_type(ABS_PATH, "an absolute path")
PathText = _pattern_type(PATH, "a path (not starting with '-')")
Word = _pattern_type(WORD, "one word (no spaces, not starting with '-')")
WebUrl = _pattern_type(WEB_URL, "an http(s) URL")
CatalogPath = _pattern_type(CATALOG_PATH, "a path relative to the catalog root (no leading "
                            "'/' or '-', no '..')")
OptionName = _pattern_type(OPTION_NAME, "an option name (lower-case letters, digits, '-')")
SafeId = _pattern_type(SAFE_ID, "a safe file name (letters, digits, '._+-')")
Text = Annotated[str, AfterValidator(check_text)]
# a whole value (mapping, list, scalar) whose strings hold no control character
NoControls = BeforeValidator(no_controls)
