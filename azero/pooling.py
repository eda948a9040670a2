"""Pooling over the board, for the network's parts (azero/blocks.py) and their int8 forms
(azero/quantized.py).

`mask` float [B, 1, H, W] is 1 on each board's points and 0 beyond: boards of several sizes
share one batch, each at the top left of the largest (azero/network.py's `pad_boards`);
None means every point of the tensor is on the board.
"""

from __future__ import annotations

import torch

WIDTH_CENTRE = 14.0  # (KataGo's constants: the size feature is 0 at 14 points of width, 19x19 +0.5)
WIDTH_SCALE = 10.0


def _mean_and_max(x: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(mean float [B, C], max float [B, C], points float [B, 1]) of x float [B, C, H, W] over each board."""
    if mask is None:
        points = torch.full((x.shape[0], 1), float(x.shape[2] * x.shape[3]), dtype=x.dtype, device=x.device)
        return x.mean(dim=(2, 3)), x.amax(dim=(2, 3)), points
    points = mask.sum(dim=(2, 3))
    mean = (x * mask).sum(dim=(2, 3)) / points
    return mean, x.masked_fill(mask == 0, float("-inf")).amax(dim=(2, 3)), points


def global_pool(x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """float [B, C, H, W] -> float [B, 2C]: each channel's mean over the board, then each one's maximum.

    (A trunk block's pooling; the heads' `board_pool` adds a feature that tells sizes apart.)
    """
    if mask is None:
        return torch.cat([x.mean(dim=(2, 3)), x.amax(dim=(2, 3))], dim=1)
    mean, maximum, _ = _mean_and_max(x, mask)
    return torch.cat([mean, maximum], dim=1)


def board_pool(x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """float [B, C, H, W] -> float [B, 3C]: each channel's mean over the board, the mean times
    (sqrt(points) - 14) / 10, which tells boards of several sizes apart (KataGo), then each
    channel's maximum."""
    mean, maximum, points = _mean_and_max(x, mask)
    size = (points.sqrt() - WIDTH_CENTRE) / WIDTH_SCALE
    return torch.cat([mean, mean * size, maximum], dim=1)
