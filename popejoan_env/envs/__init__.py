"""The adapters: the game as each framework expects it, each a thin layer over the engine and the players.

| module | framework | what |
|---|---|---|
| ``pettingzoo_aec`` | PettingZoo | ``env()``/``raw_env``: the AEC environment ``pope_joan_v2``, every seat an agent |
| ``gymnasium_env`` | Gymnasium | ``PopeJoanGymEnv``: one learner seat, the others played by opponents |
| ``sb3_vec_env`` | Stable-Baselines3 | ``BatchVecEnv``: N learner seats on the batch engine, for MaskablePPO |
| ``gymnasium_vector_env`` | Gymnasium | ``PopeJoanVectorEnv``: every seat of N deals on the batch engine, for your own algorithms |
| ``rllib_env`` | Ray RLlib | ``MixedTablesEnv``: the AEC env at mixed table sizes as one multi-agent env |
| ``rllib_policy`` | Ray RLlib | the masking RLModule ``training/train_rllib.py`` trains, the seat-to-module mapping, the export to a model file |

Each is imported on its own (``from popejoan_env.envs.gymnasium_env import PopeJoanGymEnv``): importing
this package imports no framework.
"""
