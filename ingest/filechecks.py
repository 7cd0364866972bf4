"""The check every input file passes before a byte is read: it exists, it is a regular file, it is not too big.

Shared by the trace, result and matrix readers, so a FIFO (which would block the first read forever), a
device such as ``/dev/zero`` or ``/dev/urandom`` (endless bytes), a folder or an over-size file is refused
the same way whichever reader meets it. Links are followed: a link to a regular file is that file.
"""

from __future__ import annotations

import stat
from pathlib import Path

from ingest.errors import InputError

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def regular_file_size(path: Path, limit: int, over: str = "more than the {limit:,}-byte limit") -> int:
    """The size of ``path`` if it is a regular file of at most ``limit`` bytes; else an ``InputError``."""
    try:  # stat can fail on the name itself (longer than the OS allows, a loop of links): bad input
        info = path.stat()
    except FileNotFoundError:
        raise InputError(path, 0, "no such file") from None
    except OSError as exc:
        raise InputError(path, 0, f"cannot open the file ({exc.strerror or type(exc).__name__})") from None
    if not stat.S_ISREG(info.st_mode):
        what = next((name for test, name in _KINDS if test(info.st_mode)), "not a file")
        raise InputError(path, 0, f"not a regular file ({what}); expected a file")
    if info.st_size > limit:
        raise InputError(path, 0, f"file is {info.st_size:,} bytes, " + over.format(limit=limit))
    return info.st_size
