"""MAPPO on TorchRL (``popejoan train-mappo``): this file keeps ``python training/train_mappo.py`` working in a
checkout; the code and every flag are in ``popejoan_env/training/mappo.py`` (``--help`` lists them)."""

from popejoan_env.training import run_command

if __name__ == "__main__":
    raise SystemExit(run_command("train-mappo"))
