"""The files a batch run reads and writes, and the rule between them: no file a run writes is a
file it reads (the shot list, every shot's blend, every library those link) or another file it
writes. Files are compared by resolved path (links followed) and, where they exist, by device
and inode (a hard link; another spelling on a case-insensitive disk)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .output_paths import file_keys


@dataclass(frozen=True)
class ListedFile:
    owner: str  # "shot 2 ('sh020')", or '' for a file of the run
    what: str  # "blend", "library", "output", "log", "--report", "the shot list"
    path: Path

    def naming(self) -> str:
        return f"{self.owner}: {self.what} {self.path}" if self.owner else f"{self.what} {self.path}"

    def as_other(self, writer: ListedFile) -> str:
        """How a problem of `writer` names this file."""
        own = self.owner == writer.owner
        if self.what == "blend" and own:
            return "the shot's own blend file"
        if self.what == "library":
            return f"a library {'the shot' if own else self.owner}'s blend links"
        return f"{self.owner}'s {self.what}" if self.owner else f"{self.what} itself"


def clashes(reads: list[ListedFile], writes: list[ListedFile]) -> list[str]:
    """A problem for each written file that is a read one (it would be overwritten) or another
    written one."""
    read: dict[tuple, list[ListedFile]] = {}
    for entry in reads:
        for key in file_keys(entry.path):
            read.setdefault(key, []).append(entry)
    written: dict[tuple, ListedFile] = {}
    problems = []
    for entry in writes:
        mine = file_keys(entry.path)
        sources = [source for k in sorted(mine) for source in read.get(k, [])]
        # Its own shot's files first: the commonest slip, and the plainest message.
        source = min(sources, key=lambda s: s.owner != entry.owner, default=None)
        other = next((written[k] for k in sorted(mine) if k in written), None)
        if source is not None:
            problems.append(f"{entry.naming()} is {source.as_other(entry)}: it would be overwritten")
        elif other is not None:
            problems.append(f"{entry.naming()} is also {other.as_other(entry)}")
        for key in mine:
            written.setdefault(key, entry)
    return problems


def library_files(shots: list, scanned: dict[str, dict]) -> tuple[list[ListedFile], list[str]]:
    """(every library each shot's blend links, as read files; a problem for each blend Blender
    could not open). `scanned`: library_scan.scan's result, by blend path."""
    libraries, problems = [], []
    for shot in shots:
        found = scanned.get(str(shot.blend), {"error": "not scanned"})
        if "error" in found:
            problems.append(f"{shot.label}: Blender cannot open blend {shot.blend}: {found['error']}")
        libraries += [ListedFile(shot.label, "library", Path(path)) for path in found.get("libraries", [])]
    return libraries, problems
