"""Learner decisions per second of each training set-up (``popejoan learner-throughput``): this file keeps ``python
training/learner_throughput.py`` working in a checkout; the code and every flag are in
``popejoan_env/training/learner_throughput.py`` (``--help`` lists them)."""

from popejoan_env.training import run_command

if __name__ == "__main__":
    raise SystemExit(run_command("learner-throughput"))
