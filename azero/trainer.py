"""Fitting the network: cross-entropy to the visit distribution + squared value error + weight decay,
and KataGo's auxiliary terms for the heads the network has (see `losses`).

    trainer = Trainer(net, config.train, device)
    losses = trainer.train(buffer, steps, generator, augment=True)   # mean losses of the steps
    trainer.end_iteration(seconds)     # advances the schedule (seconds: the run's clock, for one in minutes)

On a GPU the forward pass and losses run under autocast (train.mixed_precision: bfloat16
where the GPU has it, else float16 with loss scaling); on a CPU in float32 unless asked.

A loss that is not finite stops training with TrainingDiverged before the
optimizer step, and so do weights that are not finite after the last step, so the
last good checkpoint on disk stays the last good one.

With `train.ema_decay` d > 0 the optimizer fits a copy of the network (`trainer.model`)
and, after each gradient step, the network the trainer was given (the one self-play,
evaluation and checkpoints use) moves to an exponential moving average of the copy's
weights: w <- d * w + (1 - d) * w_trained, batch-norm statistics alike. d = 0 trains that
network itself.
"""

from __future__ import annotations

import copy
import math
import time

import torch
from torch.nn import functional as F
from tqdm import tqdm

from .checkpoint import non_finite
from .config import TrainConfig
from .errors import UserError
from .network import PolicyValueNet
from .replay import ReplayBuffer
from .selfplay import Samples


class TrainingDiverged(UserError):
    """A loss or a weight became NaN or infinite (the message says which, and at which step)."""


def learning_rate_factor(config: TrainConfig, iteration: int, seconds: float = 0.0) -> float:
    """The schedule's multiplier of the peak learning rate after `iteration` iterations and
    `seconds` of the run's clock (the cosine schedule's over `schedule_minutes` when set)."""
    if config.schedule == "step":
        return config.decay_factor ** (iteration // config.decay_every)
    if config.schedule == "cosine":
        floor = config.min_learning_rate / config.learning_rate if config.learning_rate else 0.0
        if config.schedule_minutes > 0:
            t = min(seconds / (60.0 * config.schedule_minutes), 1.0)
        else:
            t = min(iteration / config.schedule_iterations, 1.0)
        return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * t))
    return 1.0


def score_target(margin: torch.Tensor, limit: int) -> torch.Tensor:
    """The score head's target: float [n] margins -> float [n, 2 * limit + 1] over the margins
    -limit..limit, split between the two nearest whole margins so that its mean is the margin
    (a komi of 7.5 makes every margin a half: +0.5 is half on 0 and half on +1)."""
    position = (margin.clamp(-limit, limit) + limit).unsqueeze(1)
    low = position.floor().clamp(max=2 * limit - 1)
    high_share = position - low
    target = torch.zeros(margin.shape[0], 2 * limit + 1, device=margin.device)
    target.scatter_(1, low.long(), 1.0 - high_share)
    target.scatter_add_(1, low.long() + 1, high_share)
    return target


def wdl_target(value: torch.Tensor) -> torch.Tensor:
    """float [n] value targets in [-1, 1] -> float [n, 3] probabilities of the WDL head's classes
    (win, draw, loss): an outcome (+1, 0, -1) is its class; a value between them, as the
    search's value mixed in (`selfplay.search_value_weight`) gives, is the distribution with
    that mean and no more decided than it must be: win max(v, 0), draw 1 - |v|, loss max(-v, 0)."""
    value = value.clamp(-1.0, 1.0)
    return torch.stack([value.clamp(min=0.0), 1.0 - value.abs(), (-value).clamp(min=0.0)], dim=1)


def _weighted_mean(per_sample: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """sum(weight * per_sample) / sum(weight); 0 when no sample has weight."""
    return (weight * per_sample).sum() / weight.sum().clamp(min=1e-8)


def losses(net: PolicyValueNet, batch: Samples, config: TrainConfig | None = None) -> dict[str, torch.Tensor]:
    """The loss terms of one batch (weight decay lives in the optimizer).

    policy: cross-entropy to the search's target, averaged over the samples that carry one
    (policy_weight 1: full searches under playout cap randomization). value: squared error to
    the outcome (scalar head) or cross-entropy of win/draw/loss (WDL head). For the heads the
    network has: ownership, the binary cross-entropy of each point's owner averaged over the
    points; score, the cross-entropy of the margin's distribution plus the summed squared
    differences of its cumulative distribution (KataGo's pdf and cdf terms); opponent_policy,
    the cross-entropy to the next move's target where there is one. `total` adds them with the
    weights of `config` (TrainConfig; its defaults without one).
    """
    config = config or TrainConfig()
    out = net.outputs(batch.planes, batch.legal)
    legal, policy = batch.legal, batch.policy
    log_probs = F.log_softmax(out["policy"], dim=1).masked_fill(~legal, 0.0)
    per_sample = -(policy * log_probs).sum(dim=1)
    policy_loss = _weighted_mean(per_sample, batch.policy_weight)
    if "value_logits" in out:
        value_loss = F.cross_entropy(out["value_logits"], wdl_target(batch.value))
    else:
        value_loss = F.mse_loss(out["value"], batch.value)
    terms = {"policy": policy_loss, "value": value_loss}
    total = policy_loss + value_loss
    if "ownership_logits" in out:
        # (1 + tanh(x)) / 2 = sigmoid(2x): ownership in [-1, 1] as the probability of owning the point
        owner = (1.0 + batch.ownership.float()) / 2.0
        terms["ownership"] = F.binary_cross_entropy_with_logits(2.0 * out["ownership_logits"], owner)
        total = total + config.ownership_weight * terms["ownership"]
    if "score_logits" in out:
        target = score_target(batch.score, net.score_limit)
        log_score = F.log_softmax(out["score_logits"], dim=1)
        pdf = -(target * log_score).sum(dim=1)
        cdf = (log_score.exp().cumsum(dim=1) - target.cumsum(dim=1)).square().sum(dim=1)
        terms["score"] = (pdf + cdf).mean()
        total = total + config.score_weight * terms["score"]
    if "opponent_policy" in out:
        opponent = -(batch.opponent_policy * F.log_softmax(out["opponent_policy"], dim=1)).sum(dim=1)
        terms["opponent_policy"] = _weighted_mean(opponent, batch.opponent_weight)
        total = total + config.opponent_policy_weight * terms["opponent_policy"]
    with torch.no_grad():
        probs = log_probs.exp() * legal
        entropy = _weighted_mean(-(probs * log_probs).sum(dim=1), batch.policy_weight)
        target_entropy = _weighted_mean(-(policy * policy.clamp(min=1e-12).log()).sum(dim=1), batch.policy_weight)
    return {"total": total, **terms, "policy_entropy": entropy, "policy_kl": policy_loss - target_entropy}


def autocast_dtype(mixed_precision: str, device: torch.device | str) -> torch.dtype | None:
    """The autocast dtype of training steps on `device` (None: float32 throughout)."""
    device = torch.device(device)
    if mixed_precision == "auto":
        if device.type != "cuda":
            return None
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if mixed_precision == "float16" and device.type != "cuda":
        raise UserError("train.mixed_precision=float16 runs on a GPU only; use bfloat16 or off on a CPU")
    return {"off": None, "bfloat16": torch.bfloat16, "float16": torch.float16}[mixed_precision]


class Trainer:
    def __init__(self, net: PolicyValueNet, config: TrainConfig, device="cpu"):
        self.net, self.config, self.device = net, config, torch.device(device)
        # the network the optimizer fits: `net` itself, or a copy whose average `net` becomes
        self.model = copy.deepcopy(net) if config.ema_decay > 0 else net
        self.autocast = autocast_dtype(config.mixed_precision, self.device)
        # float16 gradients underflow without loss scaling; bfloat16 has float32's range
        self.scaler = torch.amp.GradScaler(self.device.type) if self.autocast == torch.float16 else None
        if config.optimizer == "sgd":
            self.optimizer = torch.optim.SGD(self.model.parameters(), lr=config.learning_rate,
                                             momentum=config.momentum, weight_decay=config.weight_decay)
        else:
            self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=config.learning_rate,
                                               weight_decay=config.weight_decay)
        self.iteration = 0
        self.seconds = 0.0  # the run's clock at the end of the last iteration (a schedule in minutes)
        self.steps = 0
        self._set_lr()

    def _set_lr(self) -> None:
        factor = learning_rate_factor(self.config, self.iteration, self.seconds)
        for group in self.optimizer.param_groups:
            group["lr"] = self.config.learning_rate * factor

    @property
    def learning_rate(self) -> float:
        return self.optimizer.param_groups[0]["lr"]

    def steps_for(self, new_positions: int) -> int:
        return math.ceil(new_positions * self.config.sample_reuse / self.config.batch_size)

    def train(self, buffer: ReplayBuffer, steps: int, generator: torch.Generator, *, augment: bool = True,
              progress: bool = True) -> dict[str, float]:
        """`steps` gradient steps on uniform batches; returns mean losses and samples/s."""
        model = self.model
        model.train()
        sums: dict[str, float] = {}
        start = time.perf_counter()
        for _ in tqdm(range(steps), desc="train", unit="step", disable=not progress, leave=False):
            batch = buffer.sample(self.config.batch_size, generator, augment).map(lambda t: t.to(self.device))
            with torch.autocast(self.device.type, dtype=self.autocast or torch.float32,
                                enabled=self.autocast is not None):
                terms = losses(model, batch, self.config)
            if not torch.isfinite(terms["total"]):
                raise TrainingDiverged(f"the loss of gradient step {self.steps + 1} is "
                                       f"{float(terms['total'].detach())}")
            self.optimizer.zero_grad(set_to_none=True)
            if self.scaler is not None:
                self.scaler.scale(terms["total"]).backward()
                self.scaler.unscale_(self.optimizer)
            else:
                terms["total"].backward()
            if self.config.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), self.config.grad_clip)
            if self.scaler is not None:
                self.scaler.step(self.optimizer)  # skips a step whose gradients overflowed
                self.scaler.update()
            else:
                self.optimizer.step()
            self.steps += 1
            if model is not self.net:
                self._average()
            for key, value in terms.items():
                sums[key] = sums.get(key, 0.0) + float(value.detach())
        model.eval()
        self.net.eval()
        for network in {id(model): model, id(self.net): self.net}.values():
            name = non_finite(network.state_dict())
            if name is not None:
                raise TrainingDiverged(f"the weight {name} is not finite after gradient step {self.steps}")
        seconds = time.perf_counter() - start
        out = {f"losses/{k}": v / max(steps, 1) for k, v in sums.items()}
        out["charts/train_samples_per_s"] = steps * self.config.batch_size / max(seconds, 1e-9)
        return out

    @torch.no_grad()
    def _average(self) -> None:
        """One step of the weight average: net <- d * net + (1 - d) * model (floating tensors;
        counters such as batch norm's num_batches_tracked are copied)."""
        weight = 1.0 - self.config.ema_decay
        averaged = [*self.net.parameters(), *self.net.buffers()]
        trained = [*self.model.parameters(), *self.model.buffers()]
        floats = [(a, t) for a, t in zip(averaged, trained) if a.is_floating_point()]
        torch._foreach_lerp_([a for a, _ in floats], [t for _, t in floats], weight)
        for a, t in zip(averaged, trained):
            if not a.is_floating_point():
                a.copy_(t)

    def end_iteration(self, seconds: float | None = None) -> None:
        """The next iteration's learning rate; `seconds`: the run's clock now (all sessions)."""
        self.iteration += 1
        if seconds is not None:
            self.seconds = float(seconds)
        self._set_lr()

    def state_dict(self) -> dict:
        data = {"optimizer": self.optimizer.state_dict(), "iteration": self.iteration, "steps": self.steps,
                "seconds": self.seconds}
        if self.model is not self.net:  # the checkpoint's network is the average; these are the trained weights
            data["model"] = self.model.state_dict()
        if self.scaler is not None:
            data["scaler"] = self.scaler.state_dict()
        return data

    def load_state_dict(self, data: dict) -> None:
        """Restore what state_dict saved; call it after the network's own weights are loaded (a
        checkpoint saved without an average starts the trained copy from them)."""
        if self.model is not self.net:
            self.model.load_state_dict(data.get("model", self.net.state_dict()))
        self.optimizer.load_state_dict(data["optimizer"])
        if self.scaler is not None and "scaler" in data:
            self.scaler.load_state_dict(data["scaler"])
        self.iteration = int(data["iteration"])
        self.steps = int(data["steps"])
        self.seconds = float(data.get("seconds", 0.0))  # saved since the schedule in minutes
        self._set_lr()
