"""Ablations: training arms of equal wall time, measured against each game's fixed yardsticks.

    plan = make_plan("connect4", ["base:", "nonoise:search.noise_fraction=0"], [0, 1], minutes=60, ...)
    Ablation(Path("runs/ablate-c4"), plan).run()

plan.py reads arms, yardsticks and budgets; runner.py runs the commands one at a time and
resumes; report.py writes the Markdown table and the Elo plot. docs/ablations.md gives the method.
"""

from .plan import DEFAULT_YARDSTICKS, Arm, Plan, make_plan
from .runner import Ablation

__all__ = ["DEFAULT_YARDSTICKS", "Ablation", "Arm", "Plan", "make_plan"]
