"""What an A3C worker process runs: the actor-learner loop, its rollout collection and its update."""
