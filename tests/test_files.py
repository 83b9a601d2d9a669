"""Output files: atomic writes leave the old file whole on failure, and a bad destination is refused early."""

from __future__ import annotations

import os

import pytest

from popejoan_env.errors import PopeJoanError
from popejoan_env.files import OutputPathError, check_writable, replacing, write_atomic


def test_write_atomic_replaces_the_file_and_leaves_nothing_else(tmp_path) -> None:
    path = tmp_path / "result.json"
    path.write_text("old")
    assert write_atomic(str(path), "new text") == str(path)
    assert path.read_text() == "new text"
    write_atomic(str(path), b"\x00bytes")
    assert path.read_bytes() == b"\x00bytes"
    assert os.listdir(tmp_path) == ["result.json"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(tmp_path) -> None:
    path = tmp_path / "chart.png"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with replacing(str(path)) as tmp:
            with open(tmp, "w") as fh:
                fh.write("half a fi")
            raise RuntimeError("the disk filled")
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["chart.png"]


def test_check_writable_creates_directories_and_refuses_impossible_ones(tmp_path) -> None:
    check_writable([str(tmp_path / "a" / "b" / "x.json")])
    assert (tmp_path / "a" / "b").is_dir() and not os.listdir(tmp_path / "a" / "b")
    (tmp_path / "f").write_text("")
    with pytest.raises(OutputPathError, match="cannot write"):
        check_writable([str(tmp_path / "f" / "x.json")])
    (tmp_path / "d.json").mkdir()
    with pytest.raises(OutputPathError, match="is a directory"):
        check_writable([str(tmp_path / "d.json")])
    with pytest.raises(PopeJoanError):
        check_writable(["/proc/version.json"])
