"""Fitting the network: cross-entropy to the visit distribution + squared value error + weight decay.

    trainer = Trainer(net, config.train, device)
    losses = trainer.train(buffer, steps, generator, augment=True)   # mean losses of the steps
    trainer.end_iteration()                                           # advances the schedule

On a GPU the forward pass and losses run under autocast (train.mixed_precision: bfloat16
where the GPU has it, else float16 with loss scaling); on a CPU in float32 unless asked.

A loss that is not finite stops training with TrainingDiverged before the
optimizer step, so the last good checkpoint on disk stays the last good one.
"""

from __future__ import annotations

import math
import time

import torch
from torch.nn import functional as F
from tqdm import tqdm

from .config import TrainConfig
from .errors import UserError
from .network import PolicyValueNet
from .replay import ReplayBuffer


class TrainingDiverged(UserError):
    """A loss became NaN or infinite."""


def learning_rate_factor(config: TrainConfig, iteration: int) -> float:
    """The schedule's multiplier of the peak learning rate after `iteration` iterations."""
    if config.schedule == "step":
        return config.decay_factor ** (iteration // config.decay_every)
    if config.schedule == "cosine":
        floor = config.min_learning_rate / config.learning_rate if config.learning_rate else 0.0
        t = min(iteration / config.schedule_iterations, 1.0)
        return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * t))
    return 1.0


def losses(net: PolicyValueNet, planes, policy, legal, value) -> dict[str, torch.Tensor]:
    """The loss terms of one batch (weight decay lives in the optimizer)."""
    logits, predicted = net(planes, legal)
    log_probs = F.log_softmax(logits, dim=1).masked_fill(~legal, 0.0)
    policy_loss = -(policy * log_probs).sum(dim=1).mean()
    value_loss = F.mse_loss(predicted, value)
    with torch.no_grad():
        probs = log_probs.exp() * legal
        entropy = -(probs * log_probs).sum(dim=1).mean()
        target_entropy = -(policy * policy.clamp(min=1e-12).log()).sum(dim=1).mean()
    return {
        "total": policy_loss + value_loss,
        "policy": policy_loss,
        "value": value_loss,
        "policy_entropy": entropy,
        "policy_kl": policy_loss - target_entropy,
    }


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
        self.autocast = autocast_dtype(config.mixed_precision, self.device)
        # float16 gradients underflow without loss scaling; bfloat16 has float32's range
        self.scaler = torch.amp.GradScaler(self.device.type) if self.autocast == torch.float16 else None
        if config.optimizer == "sgd":
            self.optimizer = torch.optim.SGD(net.parameters(), lr=config.learning_rate, momentum=config.momentum,
                                             weight_decay=config.weight_decay)
        else:
            self.optimizer = torch.optim.AdamW(net.parameters(), lr=config.learning_rate,
                                               weight_decay=config.weight_decay)
        self.iteration = 0
        self.steps = 0
        self._set_lr()

    def _set_lr(self) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = self.config.learning_rate * learning_rate_factor(self.config, self.iteration)

    @property
    def learning_rate(self) -> float:
        return self.optimizer.param_groups[0]["lr"]

    def steps_for(self, new_positions: int) -> int:
        return math.ceil(new_positions * self.config.sample_reuse / self.config.batch_size)

    def train(self, buffer: ReplayBuffer, steps: int, generator: torch.Generator, *, augment: bool = True,
              progress: bool = True) -> dict[str, float]:
        """`steps` gradient steps on uniform batches; returns mean losses and samples/s."""
        self.net.train()
        sums: dict[str, float] = {}
        start = time.perf_counter()
        for _ in tqdm(range(steps), desc="train", unit="step", disable=not progress, leave=False):
            batch = [t.to(self.device) for t in buffer.sample(self.config.batch_size, generator, augment)]
            with torch.autocast(self.device.type, dtype=self.autocast or torch.float32,
                                enabled=self.autocast is not None):
                terms = losses(self.net, *batch)
            if not torch.isfinite(terms["total"]):
                raise TrainingDiverged(
                    f"training diverged at step {self.steps}: loss is {float(terms['total'])}; "
                    "the last good checkpoint is kept (try a lower train.learning_rate)"
                )
            self.optimizer.zero_grad(set_to_none=True)
            if self.scaler is not None:
                self.scaler.scale(terms["total"]).backward()
                self.scaler.unscale_(self.optimizer)
            else:
                terms["total"].backward()
            if self.config.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(self.net.parameters(), self.config.grad_clip)
            if self.scaler is not None:
                self.scaler.step(self.optimizer)  # skips a step whose gradients overflowed
                self.scaler.update()
            else:
                self.optimizer.step()
            self.steps += 1
            for key, value in terms.items():
                sums[key] = sums.get(key, 0.0) + float(value.detach())
        self.net.eval()
        seconds = time.perf_counter() - start
        out = {f"losses/{k}": v / max(steps, 1) for k, v in sums.items()}
        out["charts/train_samples_per_s"] = steps * self.config.batch_size / max(seconds, 1e-9)
        return out

    def end_iteration(self) -> None:
        self.iteration += 1
        self._set_lr()

    def state_dict(self) -> dict:
        data = {"optimizer": self.optimizer.state_dict(), "iteration": self.iteration, "steps": self.steps}
        if self.scaler is not None:
            data["scaler"] = self.scaler.state_dict()
        return data

    def load_state_dict(self, data: dict) -> None:
        self.optimizer.load_state_dict(data["optimizer"])
        if self.scaler is not None and "scaler" in data:
            self.scaler.load_state_dict(data["scaler"])
        self.iteration = int(data["iteration"])
        self.steps = int(data["steps"])
        self._set_lr()
