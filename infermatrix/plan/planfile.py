"""Read a plan file: the jobs `plan --format json` printed, or one shard `--format github` wrote."""

from __future__ import annotations

import stat
from pathlib import Path

from pydantic import ValidationError

from ..errors import UsageError
from ..jsonio import loads_bounded
from .jobs import Job

MAX_PLAN_BYTES = 256 * 1024 * 1024  # 65,536 jobs of a few KB each, with room to spare


def read_plan_file(path: Path) -> list[Job]:
    """The jobs in ``path``, validated; one line (UsageError) for anything else."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):  # a FIFO or a device would block or never end
            raise UsageError(f"{path}: not a regular file")
        if info.st_size > MAX_PLAN_BYTES:
            raise UsageError(f"{path}: {info.st_size:,} bytes, more than a plan file holds "
                             f"({MAX_PLAN_BYTES:,})")
        data = loads_bounded(path.read_bytes())
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the plan: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{path}: not JSON: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, list):
        raise UsageError(f"{path}: a plan file holds a JSON list of jobs")
    try:
        return [Job.model_validate(item) for item in data]
    except ValidationError as exc:  # the first problem, where it is
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(x) for x in err["loc"])
        raise UsageError(f"{path}: not a job: {where}: {err['msg']}") from None
