"""Where a headless run may write: an output path checked before any work, and whether two
paths name one file (links followed; a hard link or another spelling of an existing file).
cli.py, the shot list and tools/bake_shots.py all compare files with these."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def check_output(text: str | None, flag: str = "--output", writable: bool = True) -> Path | None:
    """The path `flag` names, resolved, or ValueError before any work: empty, a directory, a
    parent that is a file, or (`writable`) a folder this process cannot write in (tried with a
    temporary file). Missing folders are fine: they are made on writing."""
    if text is None:
        return None
    if not text.strip():
        raise ValueError(f"{flag} is empty: give the file to write")
    if "\0" in text:
        raise ValueError(f"{flag} {text!r} holds a NUL character")
    out = Path(text).expanduser().resolve()
    if out.is_dir():
        raise ValueError(f"{flag} {out} is a directory: give the file to write in it")
    folder = out.parent
    while not folder.exists():  # the missing folders are made on writing
        folder = folder.parent
    if not folder.is_dir():
        raise ValueError(f"{flag} {out}: {folder} is a file, not a folder")
    if not writable:
        return out
    if out.exists() and not os.access(out, os.W_OK):
        raise ValueError(f"{flag} {out} exists and is read-only")
    try:
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as exc:
        raise ValueError(f"{flag} {out}: cannot write in {folder} ({exc.strerror or exc})") from None
    return out


def file_keys(path: str | Path) -> set[tuple]:
    """What identifies the file at `path`: its resolved path (links followed) and, when it exists,
    its device and inode (the same file under another name: a hard link, another case on a
    case-insensitive disk). Two paths name one file when their keys meet."""
    keys: set[tuple] = {("path", os.path.realpath(path))}
    try:
        stat = os.stat(path)
    except (OSError, ValueError):
        return keys
    keys.add(("inode", stat.st_dev, stat.st_ino))
    return keys


def same_file(a: str | Path, b: str | Path) -> bool:
    return not file_keys(a).isdisjoint(file_keys(b))


def overwritten(writes: dict[str, Path | None], reads: dict[str, str]) -> str:
    """Why a file of `writes` (flag -> path; None: not written) would overwrite one of `reads`
    (what it is -> its path), by whatever name it is reached; '' if none would."""
    for flag, path in writes.items():
        for what, source in reads.items():
            if path is not None and source and same_file(path, source):
                return f"{flag} {path} is {what}: write to another file (the sources are never overwritten)"
    return ""
