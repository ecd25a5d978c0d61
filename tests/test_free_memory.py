"""The host's free memory under a control group's limit: the room checks had read
MemAvailable alone, so in a container limited to less than the machine's free memory a
sketch or a binning that fit the machine but not the limit was allowed up front and
then killed by the out-of-memory killer. Fake ``/proc`` and ``/sys/fs/cgroup`` trees."""

from __future__ import annotations

from pathlib import Path

import pytest

from calib_metrics import CalibrationError
from calib_metrics.functional import free_memory

GIB = 2**30


def _write(folder: Path, **files: object) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("__", ".")).write_text(f"{text}\n")


def _proc(tmp_path: Path, cgroup: str, available_kib: int = 64 * 2**20) -> Path:
    proc = tmp_path / "proc"
    _write(proc / "self", cgroup=cgroup)
    (proc / "meminfo").write_text(f"MemTotal: 1 kB\nMemAvailable:   {available_kib} kB\n")
    return proc


def _v1(tmp_path: Path, limit: int, usage: int, inactive: int) -> Path:
    root = tmp_path / "cgroup"
    _write(root / "memory", memory__limit_in_bytes=2**63 - 4096, memory__usage_in_bytes=0)
    _write(
        root / "memory" / "job" / "a1",
        memory__limit_in_bytes=limit,
        memory__usage_in_bytes=usage,
        memory__stat=f"cache 9\ntotal_inactive_file {inactive}",
    )
    return root


def test_a_v1_limit_below_memavailable_is_the_free_memory(tmp_path) -> None:
    proc = _proc(tmp_path, "5:cpu:/\n4:memory:/job/a1\n0::/")
    root = _v1(tmp_path, limit=4 * GIB, usage=3 * GIB, inactive=GIB // 2)
    # 4 GiB limit - (3 GiB used - 0.5 GiB reclaimable cache) = 1.5 GiB, under 64 GiB.
    assert free_memory.host_available_bytes(proc, root) == 3 * GIB // 2


def test_v2_limits_on_the_group_and_its_parent_take_the_least_room(tmp_path) -> None:
    proc = _proc(tmp_path, "0::/slice/job")
    root = tmp_path / "cgroup"
    _write(root, cgroup__controllers="memory")
    _write(root / "slice", memory__max=8 * GIB, memory__current=7 * GIB, memory__stat="x 1")
    _write(root / "slice" / "job", memory__max="max", memory__current=GIB)
    assert free_memory.host_available_bytes(proc, root) == GIB


def test_active_file_cache_is_free_and_room_never_negative(tmp_path) -> None:
    proc = _proc(tmp_path, "4:memory:/job/a1")
    root = _v1(tmp_path, limit=8 * GIB, usage=7 * GIB, inactive=GIB // 2)
    stat = root / "memory" / "job" / "a1" / "memory.stat"
    stat.write_text(f"total_active_file {6 * GIB}\ntotal_inactive_file {GIB // 2}\n")
    # 7 GiB used, 6.5 GiB of it file cache the kernel reclaims before it kills.
    assert free_memory.host_available_bytes(proc, root) == 8 * GIB - GIB // 2
    stat.write_text("total_inactive_file 0\n")
    (stat.parent / "memory.usage_in_bytes").write_text(f"{9 * GIB}\n")  # over the limit
    assert free_memory.host_available_bytes(proc, root) == 0


@pytest.mark.parametrize(
    "cgroup",
    ["garbage\n4:memory:/job/a1", "\n4:memory:/job/a1", "4:memory:/job/\udcff"],
    ids=["no-colons", "blank-line", "undecodable"],
)
def test_malformed_cgroup_files_never_raise(tmp_path, cgroup) -> None:
    proc = _proc(tmp_path, "", available_kib=2**20)
    (proc / "self" / "cgroup").write_bytes(cgroup.encode("utf-8", "surrogateescape"))
    root = _v1(tmp_path, limit=GIB // 2, usage=0, inactive=0)
    assert free_memory.host_available_bytes(proc, root) in (GIB // 2, GIB)


def test_no_limit_leaves_memavailable(tmp_path) -> None:
    proc = _proc(tmp_path, "4:memory:/job/a1", available_kib=2 * 2**20)
    root = _v1(tmp_path, limit=2**63 - 4096, usage=GIB, inactive=0)
    assert free_memory.host_available_bytes(proc, root) == 2 * GIB


def test_nothing_readable_is_none(tmp_path) -> None:
    assert free_memory.host_available_bytes(tmp_path / "none", tmp_path / "none") is None


def test_a_sketch_over_the_containers_room_is_refused(tmp_path, monkeypatch) -> None:
    proc = _proc(tmp_path, "4:memory:/job/a1")
    root = _v1(tmp_path, limit=GIB, usage=GIB - 64 * 2**20, inactive=0)  # 64 MiB of room
    monkeypatch.setattr(free_memory.host_available_bytes, "__defaults__", (proc, root))
    # 2^24 cells: 2 classes' sketch parts of 8-byte cells, far over 64 MiB.
    with pytest.raises(ValueError, match=r"more than the 64 MiB free on cpu"):
        CalibrationError(streaming=True, num_classes=2, average=None, resolution=2**24)
