"""
RL Zoo integration: ``--algo a3c``, ``--algo a3c_cnn`` and ``--algo sync_a2c`` work like built-in algorithms.

rl_zoo3 has no plugin entry point, and ``rl_zoo3.train`` restricts ``--algo`` to its ``ALGOS`` dict
while parsing arguments. A ``.pth`` file installed with the package imports ``sb3_a3c.zoo.startup``
when Python starts; that module only installs an import hook (standard library only, nothing heavy),
which completes rl_zoo3's modules right after they are imported (``registration``).
"""

# The Zoo names of our algorithms, and where their classes live. "a3c_cnn" is A3C with the feed-forward
# image entries of hyperparams/a3c_cnn.yml (the Zoo name selects the hyperparameter file).
ZOO_ALGORITHMS = {
    "a3c": ("sb3_a3c.a3c", "A3C"),
    "a3c_cnn": ("sb3_a3c.a3c", "A3C"),
    "sync_a2c": ("sb3_a3c.sync_a2c", "SyncA2C"),
}
