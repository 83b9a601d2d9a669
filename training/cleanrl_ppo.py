"""A single-file CleanRL-style PPO (``popejoan train-cleanrl``): this file keeps ``python training/cleanrl_ppo.py``
working in a checkout; the code and every flag are in ``popejoan_env/training/cleanrl.py`` (``--help`` lists
them)."""

from popejoan_env.training import run_command

if __name__ == "__main__":
    raise SystemExit(run_command("train-cleanrl"))
