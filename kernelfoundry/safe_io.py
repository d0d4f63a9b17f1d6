"""File I/O shared by the sandboxes: reading what an untrusted child wrote, writing results atomically."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any


def read_regular(path: str | os.PathLike, limit: int) -> bytes | None:
    """Up to *limit* bytes of a regular file, links not followed; None if absent or not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, size = [], 0
        while size < limit:
            chunk = os.read(fd, min(1 << 20, limit - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write *data* as JSON to *path* through a temporary file and a rename (readers never see half)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)
