"""A short smoke test for a machine with a CUDA device (`pytest -m gpu`; skipped without one):
training on the GPU in mixed precision, the search's torch loops on the GPU, and a Ray run whose
learner and actors share it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import games
from azero.config import load_config
from azero.network import PolicyValueNet
from azero.replay import ReplayBuffer
from azero.selfplay import SelfPlay
from azero.trainer import Trainer, autocast_dtype
from runs import tiny_args

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")]
REPO = Path(__file__).resolve().parent.parent
TINY = [*tiny_args(), "--device", "cuda"]


@pytest.mark.parametrize("mixed_precision", ["auto", "float16", "bfloat16", "off"])
def test_selfplay_and_mixed_precision_training_on_the_gpu(mixed_precision):
    if mixed_precision == "bfloat16" and not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bfloat16")
    config = load_config(game="tictactoe", overrides=[f"train.mixed_precision={mixed_precision}",
                                                      "train.batch_size=64", "selfplay.games=32"])
    game = games.make_from_spec(config.game.spec)
    net = PolicyValueNet(config.network, game).to("cuda").eval()
    samples, stats = SelfPlay(game, net, config.search, config.selfplay, device="cuda").run(256, progress=False)
    assert len(samples) >= 256 and stats.games > 0
    buffer = ReplayBuffer(game, 4096)
    buffer.add(samples)
    trainer = Trainer(net, config.train, "cuda")
    assert trainer.autocast == autocast_dtype(mixed_precision, "cuda")
    first = trainer.train(buffer, 5, torch.Generator().manual_seed(0), progress=False)
    later = trainer.train(buffer, 40, torch.Generator().manual_seed(1), progress=False)
    assert torch.isfinite(torch.tensor(later["losses/total"])) and later["losses/total"] < first["losses/total"]
    assert all(p.dtype == torch.float32 for p in net.parameters())  # autocast leaves the weights in float32


def test_training_runs_on_the_gpu(tmp_path):
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "train.py"), *TINY, "--iterations", "2",
                          "--run-dir", str(tmp_path / "run")], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert records[-1]["iteration"] == 2 and "eval/elo" in records[-1]


def test_a_ray_run_shares_the_gpu_between_learner_and_actors(tmp_path):
    pytest.importorskip("ray")
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "train.py"), *TINY, "--ray", "--actors", "2",
                          "--actor-device", "cuda", "--iterations", "2", "--run-dir", str(tmp_path / "run")],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert records[-1]["iteration"] == 2 and records[-1]["actors/count"] == 2
