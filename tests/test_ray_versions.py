"""A Ray task plays only on a worker that runs the driver's code: a node with another popejoan is refused in one line.

Without the check, a node of a cluster that has another version installed played its share of a tournament, an
evaluation, a ``simulate`` file or a training stage with its own code, and the driver merged those results with its
own, reporting its own version.  One machine is enough: Ray's workers import from the command's working directory
first, so ``popejoan benchmark --backend ray`` run inside a checkout of another commit played that checkout's code
while ``--backend local`` played the installed one.  Here the workers of a local Ray import a copy of the package
that says it is another version (the working directory at ``ray.init``, and ``PYTHONPATH`` in its runtime
environment), as a node with an older install would.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the ray backend needs Ray: pip install -e '.[ray]'")

import popejoan_env  # noqa: E402
from popejoan_env.cluster import ClusterError  # noqa: E402
from popejoan_env.tournament import run_duplicate  # noqa: E402


@pytest.fixture(scope="module")
def older_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A local Ray whose workers import a copy of this package that says it is popejoan 0.0.1."""
    if ray.is_initialized():
        pytest.skip("needs a Ray of its own (this process already has one)")
    root = tmp_path_factory.mktemp("older")
    copy = root / "popejoan_env"
    shutil.copytree(Path(popejoan_env.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    with open(copy / "__init__.py", "a", encoding="utf-8") as fh:
        fh.write('\n__version__ = "0.0.1"  # an older install on another node\n')
    here = os.getcwd()
    os.chdir(root)  # Ray puts the driver's directory first on its workers' path: a checkout's would hide the copy
    try:
        ray.init(address="local", num_cpus=1, include_dashboard=False, logging_level=logging.ERROR,
                 runtime_env={"env_vars": {"PYTHONPATH": str(root)}})
    finally:
        os.chdir(here)
    try:
        yield
    finally:
        ray.shutdown()


def test_code_identity_is_the_version_the_source_and_numpy() -> None:
    import numpy

    from popejoan_env.cluster import code_identity

    version, source, numpy_version = code_identity()
    assert (version, numpy_version) == (popejoan_env.__version__, numpy.__version__)
    assert len(source) == 64 and int(source, 16) >= 0
    assert code_identity() == (version, source, numpy_version)


def test_a_worker_with_another_popejoan_is_refused(older_workers: None) -> None:
    with pytest.raises(ClusterError, match=r"a Ray worker on .* runs popejoan 0\.0\.1 .* and this command popejoan "
                                           r".*every node needs the driver's popejoan and numpy"):
        run_duplicate(["random", "lowest", "stops_first"], deals=2, seed=1, seats=3, backend="ray")
