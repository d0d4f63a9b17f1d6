"""The raw-data channel from the sandboxed child to the judge: numpy arrays appended to one file.

The child appends arrays to ``DATA.bin`` in its working directory and names them in
its JSON result as ``[offset, dtype, shape]``; the judge reads them back from the
bytes the sandbox returns, checking every reference (known dtype, inside the file,
size matching the shape) before use.  A hostile child can put any bytes there: the
channel carries data, never code, and every check downstream treats it as untrusted.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

DATA_FILE = "DATA.bin"
#: dtypes the channel may carry (as numpy names).
DTYPES = frozenset({"float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "uint16",
                    "uint32", "uint64", "bool"})
MAX_DIMS = 8


class ChannelError(ValueError):
    """A reference into the data file is malformed (the child's result is then refused)."""


class BlobWriter:
    """Child side: append arrays to the data file, return their references."""

    def __init__(self, path: Path | str = DATA_FILE):
        self.path = Path(path)
        self._file = open(self.path, "wb")
        self.offset = 0

    def put(self, array: np.ndarray) -> list[Any]:
        array = np.ascontiguousarray(array)
        data = array.tobytes()
        ref = [self.offset, str(array.dtype), list(array.shape)]
        self._file.write(data)
        self.offset += len(data)
        return ref

    def close(self) -> None:
        self._file.close()


class BlobReader:
    """Judge side: validated arrays out of the returned bytes."""

    def __init__(self, data: bytes | None):
        self.data = data or b""

    def get(self, ref: Any) -> np.ndarray:
        if not (isinstance(ref, list) and len(ref) == 3):
            raise ChannelError(f"array reference {str(ref)[:80]} is not [offset, dtype, shape]")
        offset, dtype, shape = ref
        if dtype not in DTYPES:
            raise ChannelError(f"array dtype {str(dtype)[:40]!r} is not allowed")
        if (not isinstance(offset, int) or offset < 0 or not isinstance(shape, list) or len(shape) > MAX_DIMS
                or not all(isinstance(d, int) and d >= 0 for d in shape)):
            raise ChannelError(f"array reference {str(ref)[:80]} is malformed")
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        if offset + nbytes > len(self.data):
            raise ChannelError(f"array of {nbytes} bytes at offset {offset} lies outside the {len(self.data)}-byte "
                               "data file")
        return np.frombuffer(self.data, dtype=dtype, count=math.prod(shape), offset=offset).reshape(shape)
