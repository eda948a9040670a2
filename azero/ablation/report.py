"""An ablation's results as a Markdown table (OUT/ablation.md) and a plot of the arms' Elo (OUT/elo.svg).

One row per run (arm and seed) and, for arms run with several seeds, a pooled row: the
judge's kept moves over all its runs' positions, the matches' games added up. Every
interval is 95% (Wilson's, on the share of kept moves or on the match score with draws
as half a win); a pooled interval treats the seeds' networks as one player.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..checkpoint import atomic_write_text
from ..elo import match_elo, score_interval
from ..errors import UserError
from ..metrics import read_metrics
from ..plot import arms_svg, read_elo
from .plan import judge_options


def _percent(share: float, interval: tuple[float, float]) -> str:
    return f"{share:.1%} [{interval[0]:.1%}, {interval[1]:.1%}]"


def _elo(value: float) -> str:
    return "+inf" if value == math.inf else "-inf" if value == -math.inf else f"{value:+.0f}"


def judge_cell(kept: int, positions: int, kept_decisive: int, decisive: int) -> str:
    """'93.0% [89.6%, 95.4%]; where a move can change the value 88.7% [...] (186)'."""
    text = _percent(kept / positions, score_interval(kept / positions, positions))
    if decisive:
        share = kept_decisive / decisive
        text += f"; decisive {_percent(share, score_interval(share, decisive))} of {decisive}"
    return text


def match_cell(wins: int, draws: int, losses: int) -> str:
    """'56.3% [40.9%, 70.5%], Elo +43 [-64, +154] (22-1-17)' from the network's view."""
    games = wins + draws + losses
    score = (wins + 0.5 * draws) / games
    elo, (low, high) = match_elo(wins, draws, losses)
    return (f"{_percent(score, score_interval(score, games))}, Elo {_elo(elo)} [{_elo(low)}, {_elo(high)}] "
            f"({wins}-{draws}-{losses})")


def cell(yardstick: str, results: list[dict]) -> str:
    """The results of one yardstick (one run's, or several runs' pooled) as a table cell."""
    if not results:
        return "—"
    if judge_options(yardstick) is not None:
        return judge_cell(*(sum(r[key] for r in results) for key in ("kept", "positions", "kept_decisive",
                                                                      "decisive")))
    return match_cell(*(sum(r[key] for r in results) for key in ("a_wins", "draws", "b_wins")))


def _last_metrics(run_dir: Path) -> dict:
    records = read_metrics(run_dir)
    last = dict(records[-1]) if records else {}
    evaluations = [r for r in records if "eval/elo" in r]
    if evaluations:
        last.update({key: evaluations[-1][key] for key in ("eval/elo", "eval/elo_low", "eval/elo_high")})
    return last


def conditions(ablation) -> list[str]:
    """One line per trained run on what else the machine did while it trained: the cores the
    run kept busy and the machine's load beside them (train.py's `system/` metrics), from
    the iterations that recorded them. Runs of before those metrics get no line."""
    lines = []
    for arm, seed in ablation.plan.runs():
        records = [r for r in read_metrics(ablation.run_dir(arm, seed))
                   if "system/process_cores" in r and "system/load_average" in r]
        if not records:
            continue
        cores = sorted(r["system/process_cores"] for r in records)
        beside = sorted(r["system/load_average"] - r["system/process_cores"] for r in records)
        busy = sum(extra > 0.5 for extra in beside)
        lines.append(f"- `{arm.name}` seed {seed}: the run kept {cores[len(cores) // 2]:.2f} cores busy (median of "
                     f"{len(records)} iterations); the machine's load beside it {beside[len(beside) // 2]:+.2f} "
                     f"(median), over half a core more in {busy} of {len(records)} iterations (max "
                     f"{beside[-1]:+.2f})")
    return lines


def table(ablation) -> str:
    """The Markdown table: one row per run, then a pooled row per arm with several seeds (and a
    last column with the head-to-head matches against the first arm, if the plan has them)."""
    plan = ablation.plan
    versus = [f"head to head against {plan.arms[0].name}"] if plan.head_to_head else []
    header = ["arm", "seed", "iterations", "positions", "minutes", "ladder Elo at the end [95%]",
              *[f"`{y}`" for y in plan.yardsticks], *versus]
    rows = [header, ["---"] * 2 + ["---:"] * 3 + ["---"] * (1 + len(plan.yardsticks) + len(versus))]
    for arm in plan.arms:
        pooled: dict[str, list[dict]] = {y: [] for y in plan.yardsticks}
        matches: list[dict] = []
        seeds = []
        for seed in plan.seeds:
            record = ablation.state["runs"].get(f"{arm.name}-seed{seed}")
            if record is None:
                continue
            metrics = _last_metrics(ablation.run_dir(arm, seed))
            elo = (f"{_elo(metrics['eval/elo'])} [{_elo(metrics['eval/elo_low'])}, {_elo(metrics['eval/elo_high'])}]"
                   if "eval/elo" in metrics else "—")
            row = [arm.name, str(seed), str(metrics.get("iteration", "—")),
                   f"{metrics['charts/positions']:,}" if metrics else "—",
                   f"{metrics['charts/hours'] * 60:.1f}" if metrics else "—", elo]
            for yardstick in plan.yardsticks:
                result = record["results"].get(yardstick)
                row.append(cell(yardstick, [result] if result else []))
                if result:
                    pooled[yardstick].append(result)
            if versus:
                match = [record["head_to_head"]] if "head_to_head" in record else []
                row.append(cell("head to head", match))
                matches += match
            rows.append(row)
            seeds.append(seed)
        if len(seeds) > 1:
            rows.append([f"**{arm.name}**", "pooled", "", "", "", "",
                         *[cell(y, pooled[y]) for y in plan.yardsticks],
                         *([cell("head to head", matches)] if versus else [])])
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def method(ablation) -> str:
    """The paragraph that says how the table was made."""
    plan = ablation.plan
    budget = (f"{plan.minutes:g} minutes" if plan.minutes is not None
              else f"{plan.iterations} iteration" + ("s" if plan.iterations != 1 else ""))
    arms = "; ".join(f"`{arm.name}`: " + (", ".join(f"`{o}`" for o in arm.overrides) or "the preset")
                     for arm in plan.arms)
    common = f" with `{'`, `'.join(plan.overrides)}` for every arm" if plan.overrides else ""
    measured = []
    for yardstick in plan.yardsticks:
        options = judge_options(yardstick)
        if options is not None:
            measured.append(f"the exact solver's judgement of its moves on {options['positions']} positions from "
                            f"random play ({options['min_plies']}–{options['max_plies']} plies, seed 0): the share "
                            "that keep the position's value, and the share among the positions where some move "
                            "changes it (\"decisive\")")
        else:
            plies = plan.yardstick_opening_plies(yardstick)
            opening = f", each opened by {plies} random plies played with both colours" if plies else ""
            measured.append(f"{plan.games} games against `{yardstick}` (alternating colours{opening}, seed 0)")
    versus = (f" Head to head, each arm's final network played {plan.head_to_head} games against the "
              f"`{plan.arms[0].name}` arm's of the same seed (both searching {plan.simulations} simulations, each "
              f"game opened by {plan.head_to_head_opening_plies()} random plies played with both colours, seed 0; "
              "the score is the arm's)." if plan.head_to_head else "")
    return (f"Preset `{plan.preset}`{common}; arms {arms}. Each arm trained {budget} per seed (seeds "
            f"{', '.join(map(str, plan.seeds))}), one run at a time; then its final network, searching "
            f"{plan.simulations} simulations a move, was measured by " + "; and ".join(measured) + "."
            + versus + " Intervals are 95%: Wilson's on a share or a score (draws count half), mapped to Elo for "
            "matches.")


def write_report(ablation) -> Path:
    """Write OUT/ablation.md (and OUT/elo.svg once some run has an evaluation); returns the Markdown's path."""
    plan = ablation.plan
    curves = []
    for arm in plan.arms:
        runs = []
        for seed in plan.seeds:
            try:
                runs.append(read_elo(ablation.run_dir(arm, seed)))
            except UserError:  # not trained yet, or no evaluation yet
                continue
        if runs:
            curves.append((arm.name, runs))
    parts = [f"# Ablation: {plan.preset}", "", method(ablation), "", table(ablation), ""]
    if curves:
        atomic_write_text(ablation.folder / "elo.svg",
                          arms_svg(curves, f"{plan.preset}: Elo against training minutes, by arm"))
        parts += ["![Elo against training minutes, by arm](elo.svg)", ""]
    beside = conditions(ablation)
    if beside:
        parts += ["What else the machine did while each run trained (train.py's `system/` metrics: the "
                  "one-minute load average at each iteration's end less the cores the run itself used):", "",
                  *beside, ""]
    commands = [entry["command"] + ("" if entry.get("exit") == 0 else f"   # {entry.get('exit')}")
                for entry in ablation.state["commands"]]
    if commands:
        parts += ["Commands run, in order:", "", "```", *commands, "```", ""]
    path = ablation.folder / "ablation.md"
    atomic_write_text(path, "\n".join(parts))
    return path
