"""torchattacks' APGD-T and Square with the L2 behaviour of the reference AutoAttack (``fra31/auto-attack``).

torchattacks 3.5 departs from the reference in two places, both at L2 only:

* **APGD-T's step size**: every image of a batch steps with the *first* image's step size
  (``step_size[0]``), although the step sizes are halved image by image; the reference steps
  each image with its own. An image's attack then depends on which image comes first in its batch.
* **Square's window norms and size**: the reference rescales the new square in each channel to
  the norm that channel had in the two windows it replaces (each channel keeps its share of the
  perturbation); torchattacks takes one norm over all channels. The reference also caps the
  square's side at ``min(h, w)``; without the cap, an image much wider than high (or higher than
  wide) makes torchattacks' Square fail with a shape error.

:class:`APGDT` and :class:`Square` subclass torchattacks' attacks and replace their L2 run with
one that follows the reference, with the same random draws in the same order. APGD-T's L2 run
also computes the targeted DLR loss and the steps with the reference's rounding (torchattacks'
differs in the last bit, and the trajectories part after a few dozen steps): on the same images
and seed both attacks return the reference's images bit for bit (measured on CPU). At L-inf they
are torchattacks' attacks, untouched. This module imports torchattacks;
:func:`classwise.shifts.autoattack.autoattack_components` imports it on first use.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torchattacks

_APGD_DECAY = 0.75
"""The momentum weight of APGD's steps after the first (both implementations hard-code it)."""


def _flat_l2(v: torch.Tensor) -> torch.Tensor:
    """Per-image L2 norm, shaped ``(N, 1, 1, 1)``, as the reference computes it (its rounding)."""
    return (v**2).view(len(v), -1).sum(-1).sqrt().view(-1, 1, 1, 1)


def _unit_l2(v: torch.Tensor) -> torch.Tensor:
    return v / (_flat_l2(v) + 1e-12)


def _targeted_dlr(logits: torch.Tensor, y: torch.Tensor, y_target: torch.Tensor) -> torch.Tensor:
    """APGD-T's targeted DLR loss ``-(z_y - z_t) / (z_(1) - (z_(3) + z_(4)) / 2)`` (``z_(k)`` the
    ``k``-th largest logit), rounded as the reference rounds it. torchattacks subtracts the two
    halves one at a time: the same loss to the last bit or two, enough for the L2 trajectories
    to part after some dozens of steps."""
    ranked = logits.sort(dim=1)[0]
    rows = torch.arange(len(logits), device=logits.device)
    return -(logits[rows, y] - logits[rows, y_target]) / (ranked[:, -1] - 0.5 * (ranked[:, -3] + ranked[:, -4]) + 1e-12)


class APGDT(torchattacks.APGDT):
    """torchattacks' APGD-T; at L2 each image steps with its own step size (module docstring)."""

    def attack_single_run(self, x_in: torch.Tensor, y_in: torch.Tensor) -> Any:
        if self.norm != "L2":
            return super().attack_single_run(x_in, y_in)
        return self._l2_run(x_in if x_in.dim() == 4 else x_in.unsqueeze(0), y_in if y_in.dim() == 1 else y_in.unsqueeze(0))

    def _targeted_gradient(
        self, x_adv: torch.Tensor, y: torch.Tensor, y_target: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The targeted DLR loss's gradient at ``x_adv`` (averaged over ``eot_iter`` draws), the last logits and losses."""
        x_adv.requires_grad_()
        grad = torch.zeros_like(x_adv)
        for _ in range(self.eot_iter):
            with torch.enable_grad():
                logits = self.get_logits(x_adv)
                losses = _targeted_dlr(logits, y, y_target)
            grad += torch.autograd.grad(losses.sum(), [x_adv])[0].detach()
        return grad / float(self.eot_iter), logits.detach(), losses.detach()

    def _project(self, x: torch.Tensor, point: torch.Tensor) -> torch.Tensor:
        """``point`` pulled into the ``eps`` ball around ``x`` along the ray from ``x``, then into ``[0, 1]``."""
        offset = point - x
        return torch.clamp(x + _unit_l2(offset) * torch.clamp(_flat_l2(offset), max=self.eps), 0.0, 1.0)

    def _l2_run(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One restart against target ``self.target_class`` (the rank of the target in the clean logits).

        Returns, per image, the point of highest loss, whether it stayed correctly classified
        at every step, that loss, and the last misclassified point (torchattacks' contract).
        """
        n = len(x)
        first_check = max(int(0.22 * self.steps), 1)
        shortest_check = max(int(0.06 * self.steps), 1)
        check_shrink = max(int(0.03 * self.steps), 1)

        x_adv = torch.clamp(x + self.eps * _unit_l2(torch.randn(x.shape).to(self.device).detach()), 0.0, 1.0)
        x_best, x_best_adv = x_adv.clone(), x_adv.clone()
        y_target = self.get_logits(x).sort(dim=1)[1][:, -self.target_class]
        grad, logits, losses = self._targeted_gradient(x_adv, y, y_target)
        grad_best, loss_best = grad.clone(), losses.clone()
        robust = logits.max(1)[1] == y
        loss_history = torch.zeros([self.steps, n])  # on the CPU: torchattacks' check_oscillation reads it in numpy

        step_size = 2.0 * self.eps * torch.ones([n, 1, 1, 1], device=x.device)
        x_adv_old = x_adv.clone()
        check_length, since_check = first_check, 0
        best_at_last_check = loss_best.clone()
        reduced_at_last_check = torch.ones(n, dtype=torch.bool, device=x.device)  # the first check never blames a reduction
        for i in range(self.steps):
            with torch.no_grad():
                x_adv = x_adv.detach()
                momentum = x_adv - x_adv_old
                x_adv_old = x_adv.clone()
                weight = _APGD_DECAY if i > 0 else 1.0
                stepped = self._project(x, x_adv + step_size * _unit_l2(grad))  # each image its own step size
                x_adv = self._project(x, x_adv + (stepped - x_adv) * weight + momentum * (1 - weight))

            grad, logits, losses = self._targeted_gradient(x_adv, y, y_target)
            with torch.no_grad():
                correct = logits.max(1)[1] == y
                robust = torch.min(robust, correct)
                x_best_adv[~correct] = x_adv[~correct]
                loss_history[i] = losses.cpu()
                improved = losses > loss_best
                x_best[improved] = x_adv[improved]
                grad_best[improved] = grad[improved]
                loss_best[improved] = losses[improved]

                since_check += 1
                if since_check == check_length:
                    oscillating = self.check_oscillation(loss_history.numpy(), i, check_length, None, k3=self.thr_decr)
                    stalled = ~reduced_at_last_check & (best_at_last_check >= loss_best)  # kept its step size, gained nothing
                    reduce = torch.from_numpy(oscillating).to(x.device) | stalled
                    reduced_at_last_check, best_at_last_check = reduce, loss_best.clone()
                    if bool(reduce.any()):
                        step_size[reduce] /= 2.0
                        x_adv[reduce] = x_best[reduce]
                        grad[reduce] = grad_best[reduce]
                    since_check = 0
                    check_length = max(check_length - check_shrink, shortest_check)
        return x_best, robust, loss_best, x_best_adv


class Square(torchattacks.Square):
    """torchattacks' Square; at L2 with per-channel window norms and the square capped at ``min(h, w)`` (module docstring)."""

    def attack_single_run(self, x: torch.Tensor, y: torch.Tensor) -> Any:
        if self.norm != "L2":
            return super().attack_single_run(x, y)
        with torch.no_grad():
            return self._l2_run(x, y)

    def _window_size(self, i_iter: int, shape: tuple[int, int, int]) -> int:
        """The side of the square Square's ``i_iter``-th L2 query moves: odd, at least 3, at most ``min(h, w)``."""
        c, h, w = shape
        side = max(int(round(math.sqrt(self.p_selection(i_iter) * (h * w)))), 3)
        return min(side + 1 - side % 2, h, w)

    def _l2_start(self, x: torch.Tensor) -> torch.Tensor:
        """The first perturbation (before scaling to ``eps``): a grid of ``h // 5``-pixel squares, each a
        pair of opposite-sign bumps with a random sign per image and channel."""
        n, c, h, w = x.shape
        start = torch.zeros_like(x)
        side = h // 5
        margin = (h - 5 * side) // 2
        for top in range(margin, margin + side * (h // side), side):
            for left in range(margin, margin + side * (w // side), side):
                start[:, :, top : top + side, left : left + side] += self.eta(side).view(1, 1, side, side) * self.random_choice(
                    [n, c, 1, 1]
                )
        return start

    def _l2_run(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Random search: each query moves the perturbation's mass of two random windows into a new
        square in the first, channel by channel, and keeps the result when the loss drops or the
        image is misclassified. Returns the queries spent and the best images (torchattacks' contract)."""
        n, c, h, w = x.shape
        x_best = torch.clamp(x + self.normalize_delta(self._l2_start(x)) * self.eps, 0.0, 1.0)
        margin_min, loss_min = self.margin_and_loss(x_best, y)
        n_queries = torch.ones(n).to(self.device)
        for i_iter in range(self.n_queries):
            todo = (margin_min > 0.0).nonzero().flatten()
            if len(todo) == 0:
                break
            x_curr, x_best_curr, y_curr = x[todo], x_best[todo], y[todo]
            margin_curr, loss_curr = margin_min[todo], loss_min[todo]
            delta = x_best_curr - x_curr

            side = self._window_size(i_iter, (c, h, w))
            top, left = self.random_int(0, h - side), self.random_int(0, w - side)
            first = delta[:, :, top : top + side, left : left + side]
            first_norms = (first**2).sum(dim=(-2, -1), keepdim=True).sqrt()
            top2, left2 = self.random_int(0, h - side), self.random_int(0, w - side)
            windows = torch.zeros_like(x_curr)
            windows[:, :, top : top + side, left : left + side] = 1.0
            windows[:, :, top2 : top2 + side, left2 : left2 + side] = 1.0
            image_norms = self.lp_norm(delta)
            window_norms = ((delta * windows) ** 2).sum(dim=(-2, -1), keepdim=True).sqrt()  # per image and channel

            square = torch.ones([len(todo), c, side, side]).to(self.device)
            square *= self.eta(side).view(1, 1, side, side) * self.random_choice([len(todo), c, 1, 1])
            square += first / (1e-12 + first_norms)
            spare = torch.clamp((self.eps * torch.ones_like(square)) ** 2 - image_norms**2, min=0.0)
            square = square / (1e-12 + (square**2).sum(dim=(-2, -1), keepdim=True).sqrt()) * (spare / c + window_norms**2).sqrt()
            delta[:, :, top2 : top2 + side, left2 : left2 + side] = 0.0
            delta[:, :, top : top + side, left : left + side] = square

            x_new = torch.clamp(x_curr + self.normalize_delta(delta) * self.eps, 0.0, 1.0)
            margin, loss = self.margin_and_loss(x_new, y_curr)
            improved = (loss < loss_curr).float()
            loss_min[todo] = improved * loss + (1.0 - improved) * loss_curr
            improved = torch.max(improved, (margin <= 0.0).float())
            margin_min[todo] = improved * margin + (1.0 - improved) * margin_curr
            improved = improved.view(-1, 1, 1, 1)
            x_best[todo] = improved * x_new + (1.0 - improved) * x_best_curr
            n_queries[todo] += 1.0
            if bool((margin_min <= 0.0).all()):
                break
        return n_queries, x_best
