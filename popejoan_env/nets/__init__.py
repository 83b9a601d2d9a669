"""Networks as files and forwards: what a model file holds, how it is read, and the numpy forward that plays it.

A **model file** is Stable-Baselines3's ``.zip`` with a ``popejoan.json`` of metadata beside the weights: it loads
with ``MaskablePPO.load`` to train on, and here, without torch's pickles and with every field and tensor checked,
to play.  The agents that play a network (``players.learned``, ``pimc_net``) live in ``players/``; nothing here
imports a player.

| module | holds |
|---|---|
| ``model_file`` | the format (``popejoan-model/1``): writing it atomically, reading it back with every field and tensor checked |
| ``sb3_zip`` | a zip SB3 saved the ordinary way (``model.save``), read as a model file; ``adopt`` writes other rules into one |
| ``suits`` | the ``suits`` actor: one network shared by the four suits, in torch (training) and numpy (play) |
| ``policy`` | ``Policy``: the numpy forward of a network and the one way its cards are picked; ``load_policy`` |
| ``shipped`` | the shipped network's name and file (package data: ``nets/data/shipped.zip``) |
"""
