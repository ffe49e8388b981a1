"""RL Zoo hyperparameter files of sb3-a3c (installed as the package ``sb3_a3c.hyperparams``)."""
