"""A duplicate tournament of players and model files (``popejoan benchmark``): this file keeps ``python
training/benchmark.py`` working in a checkout; the code and every flag are in
``popejoan_env/training/benchmark.py`` (``--help`` lists them)."""

from popejoan_env.training import run_command

if __name__ == "__main__":
    raise SystemExit(run_command("benchmark"))
