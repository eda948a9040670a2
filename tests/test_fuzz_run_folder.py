"""Property-based fuzzing of the run folder: two writers starting and stopping in any order (one holds
the folder at a time, a dead one's lock is taken over), replay chunks damaged in any way (named and
refused with the folder unchanged, or read whole), and crafted checkpoints (fields dropped, shapes
changed, networks declared far larger than the file holds, weights not finite): each is loaded as
written or refused in one line; nothing else escapes. Profiles and the long form: tests/conftest.py."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
import torch

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import games  # noqa: E402
from azero import folder_lock  # noqa: E402
from azero.checkpoint import atomic_save, load_checkpoint, network_checkpoint, network_from_checkpoint  # noqa: E402
from azero.errors import UserError  # noqa: E402
from azero.network import NetworkConfig, PolicyValueNet  # noqa: E402
from azero.replay import ReplayBuffer, chunks, restore, save_chunk  # noqa: E402
from azero.selfplay import Samples  # noqa: E402
from games import GameError  # noqa: E402

GAME = games.make("tictactoe")
REFUSALS = (UserError, GameError)


# -- two writers -------------------------------------------------------------------------------------------

EVENTS = st.lists(st.tuples(st.sampled_from(["take", "release", "die"]), st.sampled_from([0, 1])), max_size=12)


@given(events=EVENTS)
def test_two_writers_in_any_order_hold_the_folder_one_at_a_time(tmp_path_factory, events):
    """Each writer takes the lock, releases it, or dies (its descriptor closed with the file left, as
    a kill -9 leaves it). At any moment at most one holds it; a take succeeds exactly when no other
    live writer holds it, and a refusal changes nothing in the folder."""
    folder = tmp_path_factory.mktemp("run")
    (folder / "config.toml").write_text("[game]\n")
    held: dict[int, folder_lock.FolderLock] = {}
    try:
        for action, writer in events:
            if action == "take":
                if writer in held:
                    continue
                before = sorted((p.name, p.read_bytes()) for p in folder.iterdir())
                try:
                    held[writer] = folder_lock.hold(folder, [f"writer-{writer}"])
                except folder_lock.FolderInUse as refusal:
                    assert 1 - writer in held, "refused with no other holder"
                    assert "\n" not in str(refusal) and f"process {os.getpid()}" in str(refusal)
                    assert sorted((p.name, p.read_bytes()) for p in folder.iterdir()) == before
                else:
                    assert 1 - writer not in held, "two holders at once"
                    assert f"writer-{writer}" in (folder / folder_lock.LOCK).read_text()
            elif writer in held:
                lock = held.pop(writer)
                if action == "release":
                    lock.release()
                    assert not (folder / folder_lock.LOCK).exists()
                else:  # the system drops a dead process's lock; its file stays
                    os.close(lock.descriptor)
                    lock.descriptor = None
        assert len(held) <= 1
        assert (folder / "config.toml").read_text() == "[game]\n"
    finally:
        for lock in held.values():
            lock.release()


# -- damaged replay chunks ------------------------------------------------------------------------------------

def samples(count: int, seed: int) -> Samples:
    generator = torch.Generator().manual_seed(seed)
    policy = torch.rand(count, GAME.num_actions, generator=generator) + 0.01
    return Samples(torch.randint(0, 2, (count, GAME.num_planes, 3, 3), dtype=torch.uint8, generator=generator),
                   policy / policy.sum(1, keepdim=True), torch.ones(count, GAME.num_actions, dtype=torch.bool),
                   torch.rand(count, generator=generator) * 2 - 1)


FIELDS = ["planes", "policy", "legal", "value", "policy_weight", "ownership", "score", "opponent_policy",
          "opponent_weight"]
CHUNK_CHANGES = st.one_of(
    st.tuples(st.just("drop"), st.sampled_from(FIELDS + ["iteration"])),
    st.tuples(st.just("rows"), st.sampled_from(FIELDS), st.integers(0, 9)),
    st.tuples(st.just("dtype"), st.sampled_from(FIELDS), st.sampled_from([torch.float64, torch.int64, torch.bool,
                                                                           torch.uint8, torch.float16])),
    st.tuples(st.just("planes"), st.integers(1, 12)),
    st.tuples(st.just("not finite"), st.sampled_from(["policy", "value", "score"]),
              st.sampled_from([float("nan"), float("inf"), float("-inf")])),
    st.tuples(st.just("iteration"), st.one_of(st.integers(-5, 10), st.text(max_size=3), st.none())),
    st.tuples(st.just("name count"), st.integers(0, 20)),
    st.tuples(st.just("bytes"), st.integers(0, 10**6), st.integers(1, 255)),
    st.tuples(st.just("cut"), st.integers(0, 10**6)),
    st.tuples(st.just("not a dict"), st.sampled_from([[], 3, "text", None])),
)


def change_chunk(path: Path, change: tuple) -> Path:
    """Apply one damage to a chunk file; returns its path (renamed for a false count)."""
    kind = change[0]
    if kind in ("bytes", "cut"):
        raw = bytearray(path.read_bytes())
        if kind == "bytes":
            raw[change[1] % len(raw)] ^= change[2]
        else:
            raw = raw[: change[1] % len(raw)]
        path.write_bytes(bytes(raw))
        return path
    if kind == "name count":
        renamed = path.with_name(f"{path.name.rsplit('-', 1)[0]}-{change[1]}.pt")
        path.rename(renamed)
        return renamed
    data = torch.load(path, weights_only=True)
    full = Samples(**{name: data[name] for name in ("planes", "policy", "legal", "value")}).fields()
    data.update({name: value.clone() for name, value in full.items() if name not in data})
    if kind == "drop":
        data.pop(change[1], None)
    elif kind == "rows":
        data[change[1]] = data[change[1]][: change[2]]
    elif kind == "dtype":
        data[change[1]] = data[change[1]].to(change[2])
    elif kind == "planes":
        data["planes"] = torch.zeros(len(data["value"]), change[1], 3, 3, dtype=torch.uint8)
    elif kind == "not finite":
        data[change[1]] = data[change[1]].clone()
        data[change[1]].view(-1)[0] = change[2]
    elif kind == "iteration":
        data["iteration"] = change[1]
    elif kind == "not a dict":
        data = change[1]
    atomic_save(data, path)
    return path


@given(which=st.integers(0, 2), change=CHUNK_CHANGES)
def test_a_damaged_chunk_is_refused_by_name_with_the_folder_unchanged_or_read_whole(tmp_path_factory, which, change):
    folder = tmp_path_factory.mktemp("replay")
    counts = (4, 6, 5)
    for iteration, count in enumerate(counts, start=1):
        save_chunk(folder, iteration, samples(count, iteration))
    target = change_chunk(chunks(folder)[which][2], change)
    listing = sorted((p.name, p.stat().st_size) for p in folder.iterdir())
    buffer = ReplayBuffer(GAME, 12)
    try:
        restore(buffer, folder, up_to=3, positions=sum(counts))
    except REFUSALS as refusal:
        message = str(refusal)
        assert "\n" not in message and (str(target) in message or str(folder) in message), message
        assert sorted((p.name, p.stat().st_size) for p in folder.iterdir()) == listing
        return
    # read: every sample is a whole, finite one of the game's shapes
    assert len(buffer) == min(12, sum(count for _, count, _ in chunks(folder)))
    assert buffer.planes.shape[1] == GAME.num_planes
    for name in buffer.names:
        value = getattr(buffer, name)
        assert not value.is_floating_point() or bool(torch.isfinite(value).all()), name


# -- crafted checkpoints --------------------------------------------------------------------------------------

def tiny_checkpoint() -> dict:
    torch.manual_seed(0)
    net = PolicyValueNet(NetworkConfig(blocks=1, channels=4, value_hidden=4), GAME).eval()
    return network_checkpoint(net, GAME, 1)


NAMES = list(tiny_checkpoint()["model"])
SIZES = st.one_of(st.integers(-3, 70), st.sampled_from([2048, 65536, 10**6, 2**40]), st.floats(allow_nan=True),
                  st.text(max_size=3), st.none())
CHECKPOINT_CHANGES = st.one_of(
    st.tuples(st.just("drop"), st.sampled_from(["format", "version", "game", "network", "model", "iteration"])),
    st.tuples(st.just("drop weight"), st.sampled_from(NAMES)),
    st.tuples(st.just("shape"), st.sampled_from(NAMES), st.lists(st.integers(0, 9), max_size=4)),
    st.tuples(st.just("declare"), st.sampled_from(["blocks", "channels", "value_hidden", "value_head", "ownership",
                                                   "extra"]), SIZES),
    st.tuples(st.just("network"), st.sampled_from([None, [], "8x2048", {}])),
    st.tuples(st.just("not finite"), st.sampled_from(NAMES), st.sampled_from([float("nan"), float("inf")])),
    st.tuples(st.just("view"), st.sampled_from(NAMES)),
    st.tuples(st.just("game"), st.sampled_from(["gomoku:size=8,k=5", "connect4", "tictactoe", "nim", "x", ""])),
    st.tuples(st.just("weight"), st.sampled_from(NAMES), st.sampled_from([0, "w", [1.0], None])),
)


def change_checkpoint(data: dict, change: tuple) -> dict:
    kind = change[0]
    if kind in ("drop weight", "shape", "not finite", "view", "weight") and (
            not isinstance(data.get("model"), dict) or not isinstance(data["model"].get(change[1]), torch.Tensor)):
        return data  # (its weights, or this one, already gone)
    if kind == "drop":
        data.pop(change[1], None)
    elif kind == "drop weight":
        data["model"].pop(change[1])
    elif kind == "shape":
        data["model"][change[1]] = torch.zeros(change[2])
    elif kind == "declare":
        data["network"] = {**(data.get("network") if isinstance(data.get("network"), dict) else {}),
                           change[1]: change[2]}
    elif kind == "network":
        data["network"] = change[1]
    elif kind == "not finite":
        weight = data["model"][change[1]]
        if weight.is_floating_point() and weight.numel():
            weight.view(-1)[weight.numel() // 2] = change[2]
    elif kind == "view":  # every value one number's: a stride-0 view of a one-number storage
        weight = data["model"][change[1]]
        if weight.numel():
            data["model"][change[1]] = weight.reshape(-1)[:1].reshape([1] * weight.dim()).expand(weight.shape)
    elif kind == "game":
        data["game"] = change[1]
    elif kind == "weight":
        data["model"][change[1]] = change[2]
    return data


@given(changes=st.lists(CHECKPOINT_CHANGES, min_size=1, max_size=3))
def test_a_crafted_checkpoint_is_loaded_as_written_or_refused_in_one_line(tmp_path_factory, changes):
    data = tiny_checkpoint()
    for change in changes:
        data = change_checkpoint(data, change)
    buffer = io.BytesIO()
    torch.save(data, buffer)
    path = tmp_path_factory.mktemp("checkpoint") / "crafted.pt"
    path.write_bytes(buffer.getvalue())
    try:
        loaded = load_checkpoint(path)
        game, net = network_from_checkpoint(loaded)
    except REFUSALS as refusal:
        assert "\n" not in str(refusal), str(refusal)
        return
    # loaded: the network the file describes, within bounds, with the file's finite weights
    assert sum(p.numel() for p in net.parameters()) < 10**6
    for name, value in net.state_dict().items():
        assert torch.equal(value, data["model"][name]), name
        assert not value.is_floating_point() or bool(torch.isfinite(value).all()), name
