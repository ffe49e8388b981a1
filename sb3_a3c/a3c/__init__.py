"""
A3C, in the order a ``learn()`` runs it: ``a3c.py`` builds an ``A3CConfig`` (``config.py``: the hyperparameters
and how to build the policy) and a backend (``backends.py``: this machine's forked workers, or
``ray_machines.py``: a one-machine backend on each Ray machine); ``actor_learner.py`` is a worker's loop, whose
update is ``sb3_a3c.common.update.apply_update``; ``messages.py`` is what a worker sends; ``reporting.py``
orders the reports into the training VecEnv's steps for the callbacks.
"""

from sb3_a3c.a3c.a3c import A3C

__all__ = ["A3C"]
