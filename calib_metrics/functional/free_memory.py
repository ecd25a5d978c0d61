"""Memory free to this process on the host: the kernel's MemAvailable, or less where the
process runs in a control group with a memory limit (a container, a batch job), whose
room is what the out-of-memory killer goes by."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

# cgroup v1 writes "no limit" as the largest page-aligned 64-bit value.
_NO_LIMIT = 2**60


def host_available_bytes(
    proc: str | Path = "/proc", cgroup_root: str | Path = "/sys/fs/cgroup"
) -> int | None:
    """The least of MemAvailable and the room left under each memory limit on this
    process's control group and its ancestors (None where neither can be read). Never
    raises: what cannot be read or parsed is left out.

    The room under a limit is the limit less the group's usage, counting its file cache
    (active and inactive: the kernel reclaims both before it kills) as free, as
    MemAvailable counts the host's; never below 0.

    Example:
        >>> free = host_available_bytes()
        >>> free is None or free >= 0
        True
    """
    rooms = [_meminfo_available(Path(proc) / "meminfo")]
    rooms += [room(folder) for folder, room in _memory_groups(str(proc), str(cgroup_root))]
    known = [room for room in rooms if room is not None]
    return min(known) if known else None


def _meminfo_available(meminfo: Path) -> int | None:
    try:
        fields = dict(line.split(":", 1) for line in meminfo.read_text().splitlines())
        return int(fields["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return None


@functools.lru_cache(maxsize=8)
def _memory_groups(proc: str, root: str) -> tuple[tuple[Path, Callable], ...]:
    """The memory controller's group folders of this process, from its own up to the
    mount point, each with the reader of its room: cgroup v1 (``N:memory:/path``) or the
    unified v2 hierarchy (``0::/path``), those with a limit. Found once per process (a
    process does not change groups, nor a group gain a limit, in practice); the limits
    and usage are read at every call."""
    try:
        lines = (Path(proc) / "self" / "cgroup").read_text().splitlines()
        groups: list[tuple[Path, Callable]] = []
        for line in lines:
            _, controllers, path = [*line.split(":", 2), "", ""][:3]
            if "memory" in controllers.split(","):
                groups += [(f, _v1_room) for f in _folders_up(Path(root) / "memory", path)]
            elif line.startswith("0::") and (Path(root) / "cgroup.controllers").exists():
                groups += [(f, _v2_room) for f in _folders_up(Path(root), path)]
        # Only the groups limited now: on a machine without limits, MemAvailable alone.
        return tuple((folder, room) for folder, room in groups if room(folder) is not None)
    except (OSError, ValueError):
        return ()


def _folders_up(mount: Path, path: str) -> list[Path]:
    """Each existing group folder from ``path`` up to the mount point (a container sees
    its own group as the root, under a path it cannot reach)."""
    parts = [p for p in path.strip("/").split("/") if p]
    folders = [mount.joinpath(*parts[:depth]) for depth in range(len(parts), -1, -1)]
    return [folder for folder in folders if folder.is_dir()]


def _v1_room(folder: Path) -> int | None:
    limit = _read_int(folder / "memory.limit_in_bytes")
    if limit is None or limit >= _NO_LIMIT:
        return None
    usage = _read_int(folder / "memory.usage_in_bytes")
    stat = _stats(folder / "memory.stat")
    cache = stat.get("total_active_file", 0) + stat.get("total_inactive_file", 0)
    return None if usage is None else max(limit - max(usage - cache, 0), 0)


def _v2_room(folder: Path) -> int | None:
    limit = _read_int(folder / "memory.max")  # "max": no limit, read as None
    usage = _read_int(folder / "memory.current")
    if limit is None or usage is None:
        return None
    stat = _stats(folder / "memory.stat")
    cache = stat.get("active_file", 0) + stat.get("inactive_file", 0)
    return max(limit - max(usage - cache, 0), 0)


def _read_int(file: Path) -> int | None:
    try:
        return int(file.read_text().strip())
    except (OSError, ValueError):
        return None


def _stats(file: Path) -> dict[str, int]:
    """A ``memory.stat`` file's fields (none where it cannot be read)."""
    try:
        pairs = (line.split() for line in file.read_text().splitlines())
        return {fields[0]: int(fields[1]) for fields in pairs if len(fields) == 2}
    except (OSError, ValueError):
        return {}
