"""What a loader does with weights that are not finite numbers, with a file that describes a network far
larger than it holds, and with damaged replay chunks: one line naming the file, nothing allocated or
changed; and a training whose loss or weights stop being finite stops there, keeping the last good
checkpoint."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

import games
from azero.checkpoint import atomic_save, load_checkpoint, network_checkpoint, safe_load
from azero.errors import UserError
from azero.network import NetworkConfig, PolicyValueNet
from azero.replay import ReplayBuffer, chunks, restore, save_chunk
from azero.selfplay import Samples
from azero.trainer import Trainer, TrainingDiverged
from commands import run_here
from test_crash import TINY, saved_iteration, train

REPO = Path(__file__).resolve().parent.parent
GAME = games.make("tictactoe")


def tiny_net(seed: int = 0) -> PolicyValueNet:
    torch.manual_seed(seed)
    return PolicyValueNet(NetworkConfig(blocks=1, channels=8, value_hidden=8), GAME).eval()


def one_line_error(out, *parts: str) -> None:
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    for part in parts:
        assert part in out.stderr, out.stderr


# -- weights that are not finite ---------------------------------------------------------------------


def test_a_checkpoint_with_a_nan_weight_is_refused_in_one_line_by_every_loader(tmp_path):
    net = tiny_net()
    with torch.no_grad():
        net.policy_conv[0].weight[0, 0, 0, 0] = float("nan")
    path = tmp_path / "nan.pt"
    atomic_save(network_checkpoint(net, GAME, 3), path)  # the public save path, as a diverged run's would be
    message = f"{path} holds weights that are not finite numbers (NaN or infinity, first in policy_conv.0.weight)"
    with pytest.raises(UserError, match=r"not finite numbers"):
        load_checkpoint(path)
    one_line_error(run_here("evaluate.py", "--game", "tictactoe", "--a", f"az:{path}", "--b", "random", "--games", "2"),
                   message)
    one_line_error(run_here("play.py", "--checkpoint", str(path), "--analysis"), message)  # (before reading stdin)


def test_resuming_from_a_latest_pt_with_nan_weights_is_refused_and_changes_nothing(tmp_path):
    run_dir = tmp_path / "run"
    assert train(*TINY, "--iterations", "1", "--run-dir", str(run_dir)).returncode == 0
    data = load_checkpoint(run_dir / "latest.pt")
    data["model"]["stem.0.weight"][0, 0, 0, 0] = float("inf")
    atomic_save(data, run_dir / "latest.pt")
    before = {p.name: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    out = run_here("train.py", "--iterations", "2", "--run-dir", str(run_dir), "--no-progress")
    one_line_error(out, "latest.pt holds weights that are not finite numbers", "stem.0.weight")
    assert {p.name: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == before


def test_a_run_whose_loss_turns_nan_stops_naming_the_iteration_and_keeps_the_last_good_checkpoint(tmp_path):
    # a real divergence: plain SGD at the largest learning rate allowed, its gradients unclipped, from the
    # first iteration that trains (the second: the first has fewer samples than train.min_replay)
    run_dir = tmp_path / "run"
    out = train(*TINY, "--set", "train.optimizer=sgd", "--set", "train.learning_rate=1e6", "--set", "train.grad_clip=0",
                "--set", "train.min_replay=100", "--iterations", "4", "--run-dir", str(run_dir))
    one_line_error(out, "error: training diverged in iteration 2: the loss of gradient step ", " is nan; ",
                   f"{run_dir} keeps iteration 1, the last good one")
    assert saved_iteration(run_dir) == 1
    data = load_checkpoint(run_dir / "latest.pt")  # loads: its weights are finite
    assert all(bool(torch.isfinite(value).all()) for value in data["model"].values() if value.is_floating_point())
    assert [json.loads(line)["iteration"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()] == [1]


def test_weights_that_stop_being_finite_at_the_last_step_stop_the_training(monkeypatch):
    """A step can leave infinite weights with a finite loss (the loss check comes before the step):
    the check after the last step stops it before anything is saved."""
    net = tiny_net()
    trainer = Trainer(net, _train_config(), "cpu")
    buffer = ReplayBuffer(GAME, 64)
    buffer.add(_samples(64))
    real_step, calls = trainer.optimizer.step, []

    def step(*args, **kwargs):
        result = real_step(*args, **kwargs)
        calls.append(1)
        if len(calls) == 3:
            with torch.no_grad():
                net.value_fc[2].weight.fill_(float("inf"))
        return result

    monkeypatch.setattr(trainer.optimizer, "step", step)
    with pytest.raises(TrainingDiverged, match=r"the weight value_fc\.2\.weight is not finite after gradient step 3"):
        trainer.train(buffer, 3, torch.Generator().manual_seed(0), progress=False)


def _train_config():
    from azero.config import TrainConfig

    return TrainConfig(batch_size=16)


def _samples(count: int, planes: int | None = None) -> Samples:
    generator = torch.Generator().manual_seed(count)
    policy = torch.rand(count, GAME.num_actions, generator=generator)
    return Samples(torch.randint(0, 2, (count, planes or GAME.num_planes, 3, 3), dtype=torch.uint8, generator=generator),
                   policy / policy.sum(1, keepdim=True), torch.ones(count, GAME.num_actions, dtype=torch.bool),
                   torch.rand(count, generator=generator) * 2 - 1)


def test_the_analysis_engine_answers_a_value_that_is_not_finite_with_an_error_not_nan(monkeypatch):
    from azero.protocols import analysis

    monkeypatch.setattr(analysis, "answer", lambda engine, request: {"winrate": float("nan"), "moves": []})
    sink = io.StringIO()
    analysis.serve(None, io.StringIO('{"id": 7, "moves": []}\n'), sink)
    reply = json.loads(sink.getvalue(), parse_constant=lambda word: pytest.fail(f"{word} is not JSON"))
    assert reply["id"] == 7 and "not a finite number" in reply["error"]


# -- a file that describes more than it holds -----------------------------------------------------------------


def described_as(tmp_path: Path, network: dict, model: dict | None = None) -> Path:
    """A checkpoint of a tiny tic-tac-toe network that says it is `network` (with `model` as its weights)."""
    data = network_checkpoint(tiny_net(), GAME, 0)
    data["network"] = network
    if model is not None:
        data["model"] = model
    path = tmp_path / "claims.pt"
    atomic_save(data, path)
    return path


def peak_megabytes(code: str) -> tuple[float, str]:
    """Run `code` in a fresh interpreter; (its peak resident memory in MB, its output). The peak is
    the process's own memory's high-water mark (VmHWM): getrusage's ru_maxrss carries a forking
    parent's peak across exec, which in a long pytest run is the test process's gigabytes."""
    script = (f"import sys\n{code}\n"
              "print(next(int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM:')) / 1024)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=REPO)
    lines = out.stdout.strip().splitlines()
    return float(lines[-1]), "\n".join(lines[:-1]) + out.stderr


def test_a_small_file_describing_a_huge_network_is_refused_before_it_is_allocated(tmp_path):
    path = described_as(tmp_path, {"blocks": 8, "channels": 2048, "value_hidden": 64}, model={})
    assert path.stat().st_size < 2000
    peak, said = peak_megabytes(
        "from azero.players import make\nimport games\nfrom azero.errors import UserError\n"
        f"try:\n    make('az:{path}', games.make('tictactoe'))\nexcept UserError as error:\n    print(error)")
    assert "its weights do not match the network it describes: 120 weights it needs are missing" in said, said
    assert peak < 1000, f"{peak:.0f} MB"  # the network it describes takes 2.4 GB (this peaked at 2.6 GB)


def test_weights_of_other_shapes_or_views_of_a_few_bytes_are_refused_in_one_line(tmp_path):
    weights = tiny_net().state_dict()
    other = dict(weights, **{"stem.0.weight": torch.zeros(16, GAME.num_planes, 3, 3)})
    with pytest.raises(UserError, match=r"stem\.0\.weight is \[16, \d+, 3, 3\] there, the description needs \[8, "):
        load_checkpoint(described_as(tmp_path, {"blocks": 1, "channels": 8, "value_hidden": 8}, other))
    # a stride-0 view: the shape the description needs, over a storage of one number
    view = dict(weights, **{"stem.0.weight": torch.zeros(1).expand(8, GAME.num_planes, 3, 3)})
    with pytest.raises(UserError, match=r"stem\.0\.weight declares \d+ values over a storage of 4 bytes"):
        load_checkpoint(described_as(tmp_path, {"blocks": 1, "channels": 8, "value_hidden": 8}, view))
    with pytest.raises(UserError, match=r"network description .* is not one azero builds \(network\.blocks"):
        load_checkpoint(described_as(tmp_path, {"blocks": 10**6, "channels": 8, "value_hidden": 8}))


def test_a_checkpoint_whose_parts_are_compressed_is_refused_before_they_inflate(tmp_path):
    data = network_checkpoint(tiny_net(), GAME, 0)
    data["padding"] = torch.zeros(16 << 20)  # 64 MB of zeros: a few dozen KB once deflated
    buffer = io.BytesIO()
    torch.save(data, buffer)
    path = tmp_path / "deflated.pt"
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as source, zipfile.ZipFile(path, "w") as out:
        for info in source.infolist():
            out.writestr(info.filename, source.read(info.filename), compress_type=zipfile.ZIP_DEFLATED)
    assert path.stat().st_size < 1 << 20
    with pytest.raises(UserError, match=r"deflated\.pt is not a checkpoint torch\.save wrote: its part .* is "
                                        r"compressed"):
        load_checkpoint(path)


# -- replay chunks ---------------------------------------------------------------------------------------------


def chunk_folder(tmp_path: Path, counts=(5, 6, 7)) -> tuple[Path, int]:
    folder = tmp_path / "replay"
    folder.mkdir()
    for iteration, count in enumerate(counts, start=1):
        save_chunk(folder, iteration, _samples(count))
    return folder, sum(counts)


def damage(path: Path, change) -> None:
    data = safe_load(path, "replay file")
    change(data)
    atomic_save(data, path)


@pytest.mark.parametrize("what, change, words", [
    ("no policy", lambda d: d.pop("policy"), "no 'policy' field"),
    ("too few rows", lambda d: d.update(value=d["value"][:-1]), "its 'value' has shape [5], not [6]"),
    ("planes of another game", lambda d: d.update(planes=d["planes"][:, :1]), "its 'planes' has shape [6, 1, 3, 3]"),
    ("another dtype", lambda d: d.update(legal=d["legal"].float()), "its 'legal' is torch.float32, not torch.bool"),
    ("a NaN target", lambda d: d["value"].__setitem__(0, float("nan")), "its 'value' holds values that are not finite"),
    ("another iteration", lambda d: d.update(iteration=9), "it says iteration 9, its name 2"),
    ("nothing in it", lambda d: d.clear(), "it says iteration None, its name 2"),
])
def test_a_damaged_replay_chunk_is_named_and_the_resume_changes_nothing(tmp_path, what, change, words):
    folder, total = chunk_folder(tmp_path)
    save_chunk(folder, 4, _samples(3))  # a later iteration's chunk, which a resume at 3 deletes
    second = next(path for iteration, _, path in chunks(folder) if iteration == 2)
    damage(second, change)
    names = sorted(path.name for path in folder.iterdir())
    with pytest.raises(UserError) as refused:
        restore(ReplayBuffer(GAME, 100), folder, up_to=3, positions=total)
    message = str(refused.value)
    assert message.startswith(f"{second} is a damaged replay chunk (") and words in message, message
    assert "move it out of" in message and "\n" not in message
    assert sorted(path.name for path in folder.iterdir()) == names  # nothing deleted
    second.rename(tmp_path / second.name)  # moved away, as the message says: the run resumes without it
    buffer = ReplayBuffer(GAME, 100)
    restore(buffer, folder, up_to=3, positions=total)
    assert len(buffer) == total - 6 and buffer.total_added == total


def test_a_chunk_whose_name_gives_a_false_count_is_refused(tmp_path):
    folder, total = chunk_folder(tmp_path)
    first = next(path for iteration, _, path in chunks(folder) if iteration == 1)
    first.rename(folder / "iter-000001-4.pt")
    with pytest.raises(UserError, match=r"iter-000001-4\.pt is a damaged replay chunk \(its 'planes' has shape "
                                        r"\[5, \d+, 3, 3\], not \[4, "):
        restore(ReplayBuffer(GAME, 100), folder, up_to=3, positions=total - 1)


def test_a_flipped_bit_in_a_chunk_fails_its_checksum(tmp_path):
    """Chunks are torch.save archives, read through the checkpoints' loader: each part's CRC-32 is
    checked (chunks written before this check have them too)."""
    folder, total = chunk_folder(tmp_path)
    path = chunks(folder)[0][2]
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = next(i for i in archive.infolist() if i.filename.endswith("/data/0"))
    name_length, extra_length = (int.from_bytes(raw[info.header_offset + at:info.header_offset + at + 2], "little")
                                 for at in (26, 28))  # (the local header's own lengths)
    raw[info.header_offset + 30 + name_length + extra_length + 1] ^= 0x10
    path.write_bytes(bytes(raw))
    with pytest.raises(UserError, match=r"iter-000001-5\.pt is damaged: its part .*data/0 does not match its "
                                        "checksum"):
        restore(ReplayBuffer(GAME, 100), folder, up_to=3, positions=total)
