"""Memory free to this process on the host: the kernel's MemAvailable, or less where the
process runs in a control group with a memory limit (a container, a batch job), whose
room is what the out-of-memory killer goes by."""

from __future__ import annotations

from pathlib import Path

# cgroup v1 writes "no limit" as the largest page-aligned 64-bit value.
_NO_LIMIT = 2**60


def host_available_bytes(
    proc: str | Path = "/proc", cgroup_root: str | Path = "/sys/fs/cgroup"
) -> int | None:
    """The least of MemAvailable and the room left under each memory limit on this
    process's control group and its ancestors (None where neither can be read).

    The room under a limit is the limit less the group's usage, counting its inactive file
    cache as free (the kernel reclaims that before it kills), as ``docker stats`` does.

    Example:
        >>> free = host_available_bytes()
        >>> free is None or free > 0
        True
    """
    rooms = [_meminfo_available(Path(proc) / "meminfo")]
    rooms += _cgroup_rooms(Path(proc) / "self" / "cgroup", Path(cgroup_root))
    known = [room for room in rooms if room is not None]
    return min(known) if known else None


def _meminfo_available(meminfo: Path) -> int | None:
    try:
        fields = dict(line.split(":", 1) for line in meminfo.read_text().splitlines())
        return int(fields["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return None


def _cgroup_rooms(self_cgroup: Path, root: Path) -> list[int | None]:
    """The room under each limited group from this process's up to the root: the memory
    controller's hierarchy in cgroup v1 (``N:memory:/path``), the unified one in v2
    (``0::/path``)."""
    try:
        lines = self_cgroup.read_text().splitlines()
    except OSError:
        return []
    rooms: list[int | None] = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            rooms += _rooms_up(root / "memory", path, _v1_room)
        elif controllers == "" and (root / "cgroup.controllers").exists():
            rooms += _rooms_up(root, path, _v2_room)
    return rooms


def _rooms_up(mount: Path, path: str, room_of) -> list[int | None]:
    """``room_of`` each existing group directory from ``path`` up to the mount point (a
    container sees its own group as the root, under a path it cannot reach)."""
    parts = [p for p in path.strip("/").split("/") if p]
    folders = [mount.joinpath(*parts[:depth]) for depth in range(len(parts), -1, -1)]
    return [room_of(folder) for folder in folders if folder.is_dir()]


def _v1_room(folder: Path) -> int | None:
    limit = _read_int(folder / "memory.limit_in_bytes")
    if limit is None or limit >= _NO_LIMIT:
        return None
    usage = _read_int(folder / "memory.usage_in_bytes")
    cache = _stat(folder / "memory.stat", "total_inactive_file")
    return None if usage is None else limit - max(usage - cache, 0)


def _v2_room(folder: Path) -> int | None:
    limit = _read_int(folder / "memory.max")  # "max": no limit, read as None
    usage = _read_int(folder / "memory.current")
    if limit is None or usage is None:
        return None
    return limit - max(usage - _stat(folder / "memory.stat", "inactive_file"), 0)


def _read_int(file: Path) -> int | None:
    try:
        return int(file.read_text().strip())
    except (OSError, ValueError):
        return None


def _stat(file: Path, key: str) -> int:
    """One field of a ``memory.stat`` file (0 where absent)."""
    try:
        for line in file.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0
