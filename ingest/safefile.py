"""The small files spectune keeps beside a store: made, read and removed without touching anything else.

Owns every file the product creates next to a store (``<store>.holder``, ``<store>.default-stamp``, the build's
``<store>.lock``; derived answers live in the store itself: analysis/derived.py). The rules, for a folder anyone
may have put things into:

- **Writing** never follows a link and never writes into an existing file: the bytes go to a fresh temp name in
  the same folder (``O_CREAT|O_EXCL|O_NOFOLLOW``), which then replaces the name atomically (``os.replace``). A
  name that is held by something other than a regular file (a symbolic link, a FIFO, a device, a folder) is left
  as it is and the write is skipped: its target stays byte-identical.
- **Reading** opens only regular files, without following a link (unless asked: a store may be reached through
  one), non-blocking (a FIFO never waits for a writer), checks what it opened with ``fstat`` and reads at most a
  stated number of bytes (``/dev/zero`` or a huge file is refused, not read).
- **Removing** takes only a regular file whose content the caller recognises as its own.

A sidecar that breaks these rules is treated as absent: the command goes on and says so once on stderr
(``warning: <path>: …; ignored``). docs/reliability.md states this choice.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import sys
from collections.abc import Callable
from pathlib import Path

_warned: set[str] = set()


def describe(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def warn_once(path: str | Path, what: str) -> None:
    """One ``warning:`` line per path and process: a bad sidecar is reported, not repeated at every touch."""
    key = str(path)
    if key in _warned:
        return
    _warned.add(key)
    text = "".join(ch if ch.isprintable() else "?" for ch in f"{key}: {what}; ignored")
    print(f"warning: {text}", file=sys.stderr, flush=True)


class Refused(Exception):
    """The name is there but is not a file spectune may use (its reason is the message)."""


def _folder_fd(path: Path) -> tuple[int, str]:
    """An open descriptor of ``path``'s folder and the bare name: later steps cannot be redirected by a swap of
    the folder."""
    fd = os.open(path.parent if str(path.parent) else ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    return fd, path.name


def open_regular(path: str | Path, limit: int, *, dir_fd: int | None = None, follow: bool = False,
                 owner: int | None = None) -> int | None:
    """An open read-only descriptor of a regular file; None when there is no such file. Raises :class:`Refused`
    for anything that is not a regular file (after following a link only when ``follow``), a file of another
    owner (when ``owner`` is given) or one larger than ``limit`` bytes."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        before = os.stat(path, dir_fd=dir_fd, follow_symlinks=follow)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Refused(exc.strerror or str(exc)) from None
    if not stat.S_ISREG(before.st_mode):  # decided before open(): a device is never opened at all
        raise Refused(f"is {describe(before.st_mode)}, not a regular file")
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:  # ELOOP: a link put there since
        raise Refused(exc.strerror or str(exc)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
            raise Refused("changed while being opened")
        if owner is not None and st.st_uid != owner:
            raise Refused(f"owned by another user (uid {st.st_uid})")
        if st.st_size > limit:
            raise Refused(f"larger than {limit} bytes")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(path: str | Path, limit: int, *, dir_fd: int | None = None, follow: bool = False,
               owner: int | None = None) -> bytes | None:
    """The file's bytes (at most ``limit``), under :func:`open_regular`'s rules; None when there is no such file."""
    fd = open_regular(path, limit, dir_fd=dir_fd, follow=follow, owner=owner)
    if fd is None:
        return None
    try:
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:  # grew while read
            raise Refused(f"larger than {limit} bytes")
        return data
    finally:
        os.close(fd)


def read_sidecar(path: Path, limit: int = 64 * 1024) -> bytes | None:
    """A sidecar's bytes, or None when it is absent or not usable (then said once on stderr)."""
    try:
        return read_bytes(path, limit)
    except Refused as exc:
        warn_once(path, str(exc))
        return None
    except OSError:
        return None


def write_atomic(path: str | Path, data: bytes | memoryview, *, dir_fd: int | None = None,
                 mode: int = 0o644) -> None:
    """Put ``data`` at ``path`` as a new file (temp name, exclusive create, atomic rename). Raises
    :class:`Refused` when the name is held by something other than a regular file, OSError when the folder
    cannot be written."""
    def fill(fd: int) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]

    write_with(path, fill, dir_fd=dir_fd, mode=mode)


def write_with(path: str | Path, fill: Callable[[int], None], *, dir_fd: int | None = None,
               mode: int = 0o644) -> None:
    """:func:`write_atomic` for content streamed by ``fill(fd)`` into the fresh temp file."""
    own_fd = dir_fd is None
    if own_fd:
        dir_fd, name = _folder_fd(Path(path))
    else:
        name = str(path)
    tmp = None
    try:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):
                raise Refused(f"is {describe(st.st_mode)}, not a regular file")
        except FileNotFoundError:
            pass
        tmp = f".{name[:80]}.{os.getpid()}.{secrets.token_hex(6)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
        try:
            fill(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        tmp = None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
        if own_fd:
            os.close(dir_fd)


def write_sidecar(path: Path, data: bytes) -> bool:
    """Write a sidecar safely; False (said once on stderr when the name is held by something else) when not
    written. A read-only folder is silent: the sidecars are hints, never needed for a correct answer."""
    try:
        write_atomic(path, data)
    except Refused as exc:
        warn_once(path, str(exc))
        return False
    except OSError:
        return False
    return True


def remove_if_ours(path: str | Path, is_ours: Callable[[bytes], bool], *, limit: int = 64 * 1024,
                   dir_fd: int | None = None) -> bool:
    """Remove ``path`` only when it is a regular file (not a link) whose first bytes ``is_ours`` recognises.
    True when removed."""
    own_fd = dir_fd is None
    if own_fd:
        try:
            dir_fd, name = _folder_fd(Path(path))
        except OSError:
            return False
    else:
        name = str(path)
    try:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                return False
            head = _head(name, dir_fd, limit)
            if head is None or not is_ours(head):
                return False
            now = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):  # swapped since it was checked
                return False
            os.unlink(name, dir_fd=dir_fd)
            return True
        except OSError:
            return False
    finally:
        if own_fd:
            os.close(dir_fd)


def _head(name: str, dir_fd: int | None, limit: int) -> bytes | None:
    """Up to ``limit`` first bytes of a regular file (never a link, never blocking)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit)
    finally:
        os.close(fd)
