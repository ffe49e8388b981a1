"""
A3C: Hogwild worker processes sharing one policy and one optimizer in shared memory.

The folders say which process runs what:

- ``a3c.py``: the ``A3C`` model, in the user's process: arguments, ``learn()``, callbacks and logs
  (with ``validation.py``, its argument checks, and ``shared_optimizers.py``, the optimizers whose statistics
  live in shared memory).
- ``worker/``: what a worker process runs: the actor-learner loop (``actor_learner.py``: sync, rollout, update),
  the rollout collection (``rollout_collector.py``, ``step_recorder.py``) and the update (``updates.py``:
  Hogwild, or the workers' mean gradient with ``synchronous_updates``).
- ``runner/``: what starts, feeds and listens to the workers: the backends ``A3C.learn()`` drives
  (``backends.py``: this machine's forked workers; ``ray_machines.py`` with ``parameter_sync.py``: a one-machine
  backend on each Ray machine), the processes (``worker_pool.py``), and the ordering of the workers' reports
  into SB3's callback steps (``report_merger.py``).
- Between the two sides: ``config.py`` (what the workers need of the model), ``job.py`` (one machine's shared
  memory and budget for one ``learn()``), ``messages.py`` (what a worker sends back) and ``worker_envs.py``
  (each worker's slice of the training envs, and how envs travel between processes).
"""

from sb3_a3c.a3c.a3c import A3C

__all__ = ["A3C"]
