"""Training on Ray: self-play actors, an evaluator actor and the learner (the run itself).

    cluster.py   Ray imported on demand (one clear error without it), a local instance or a cluster
    ledger.py    what an actor sends (a Chunk of finished games) and the learner's check of its ids
    workers.py   the actors' classes: SelfPlayWorker (a batch of games, as SelfPlay), EvaluatorWorker
    source.py    RaySelfPlay: the run's source of samples when self-play runs on actors
    throughput.py  self-play throughput on actors against one process; the learner's costs per actor
    faults.py    the fault test: kill -9 actors during a run (scripts/ray_fault_test.py)

The learner is azero/loop.py's Run, unchanged: it owns the replay buffer, the optimizer and the
run folder, and takes its samples from RaySelfPlay instead of its own SelfPlay.
"""
