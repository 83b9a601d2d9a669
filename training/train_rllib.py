"""Self-play PPO on Ray RLlib (``popejoan train-rllib``): this file keeps ``python training/train_rllib.py``
working in a checkout; the code and every flag are in ``popejoan_env/training/rllib.py`` (``--help`` lists
them)."""

from popejoan_env.training import run_command

if __name__ == "__main__":
    raise SystemExit(run_command("train-rllib"))
