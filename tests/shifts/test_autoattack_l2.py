"""AutoAttack at L2: APGD-T's per-image step size and Square's per-channel window norms and size cap,
where torchattacks departs from the reference (classwise.shifts.autoattack_l2)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from classwise.shifts.attack_settings import AutoAttackSettings
from classwise.shifts.autoattack import autoattack_components

pytest.importorskip("torchattacks")

SEED = 3


@pytest.fixture(scope="module", autouse=True)
def one_thread():  # type: ignore[no-untyped-def]
    """Models this small run fastest on one thread (the attacks' loops are step by step)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class Recording(nn.Module):
    """A model that keeps every batch it is asked about: the attack's queries, in order."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net
        self.inputs: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.inputs.append(x.detach().clone())
        return self.net(x)


def _component(model: nn.Module, name: str, *, eps: float) -> object:
    return dict(autoattack_components(model, attack=AutoAttackSettings("l2", eps, "standard"), n_classes=4, seed=SEED))[name]


def test_apgdt_steps_each_image_with_its_own_step_size() -> None:
    """APGD-T halves each image's step size on that image's own loss history. With the first
    image's step size for all (torchattacks' ``step_size[0]``), an image's steps depend on which
    image shares its batch; with its own they do not. The second image of ``[a, b]`` and of
    ``[b, b]`` gets the same random start (the second chunk of the same seeded draw), so its
    trajectory must be the same in both batches, query for query and bit for bit."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(48, 16), nn.ReLU(), nn.Linear(16, 4)).eval()
    x = torch.rand(8, 3, 4, 4)
    with torch.no_grad():
        y = net(x).argmax(1)

    def second_image_queries(batch: list[int]) -> torch.Tensor:
        model = Recording(net)
        attack = _component(model, "apgd-t", eps=0.3)
        attack.n_target_classes = 1  # one run: the batch stays whole even when the first image is fooled
        attack.steps = 10  # step sizes checked (and halved) after steps 2, 3, ..., 10
        attack(x[batch], y[batch])
        assert all(len(query) == 2 for query in model.inputs)
        return torch.stack([query[1] for query in model.inputs])

    for b in range(1, 8):
        alone = second_image_queries([b, b])
        assert len(alone) == 13  # the clean check, the target, the start and 10 steps
        assert torch.equal(second_image_queries([0, b]), alone), f"image {b}"


def _never_fooled(shape: tuple[int, int, int]) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """A linear model whose class 0 wins by about 3 logits whatever the perturbation of norm 0.4,
    and images in ``[0.5, 0.6]``: no query leaves ``[0, 1]``, none fools the model, every query runs."""
    torch.manual_seed(0)
    x = 0.5 + 0.1 * torch.rand(4, *shape)
    net = nn.Sequential(nn.Flatten(), nn.Linear(math.prod(shape), 4))
    with torch.no_grad():
        net[1].weight.mul_(0.3)
        net[1].bias.copy_(torch.tensor([3.0, 0.0, 0.0, 0.0]))
    return net.eval(), x, torch.zeros(4, dtype=torch.long)


def test_square_moves_each_channels_mass_within_that_channel() -> None:
    """The reference's L2 Square rescales the new square, channel by channel, to the norm that channel
    had in the two windows it replaces (plus an equal share of the budget left over, none here: the
    perturbation starts at norm ``eps``). Each channel's norm is then the same in every query. The
    start gives every channel the same norm, ``eps / sqrt(3)`` (its squares carry the same energy in
    each channel), so every query must have exactly that in every channel; torchattacks' norm over all
    channels at once shifts mass between channels (up to 5.9 % of a channel's norm here)."""
    eps = 0.4
    net, x, y = _never_fooled((3, 8, 8))
    model = Recording(net)
    square = _component(model, "square", eps=eps)
    square.n_queries = 60  # squares of 7 and 5 pixels (p 0.8 and 0.4)
    assert torch.equal(square(x, y), x)  # nothing fooled: the clean images back
    queries = torch.stack(model.inputs[1:])  # after the clean check: the start, 60 queries, the final check
    assert queries.shape == (62, 4, 3, 8, 8)
    channel_norms = (queries - x).pow(2).sum(dim=(-2, -1)).sqrt()
    assert torch.allclose(channel_norms, torch.full_like(channel_norms, eps / math.sqrt(3)), rtol=1e-5, atol=0)


def test_square_caps_its_window_at_the_image() -> None:
    """On a 6 x 24 image the square's side, odd and at least 3, ``round(sqrt(p * 6 * 24))``, is 11 at
    ``p`` = 0.8 (queries 0-10) and 9 at 0.4 (11-50): the reference caps both at ``min(h, w)`` = 6.
    At 0.2 (51-59) it is 5. The start puts a 1-pixel square (``h // 5``) on each of the 6 x 24
    pixels. Without the cap the window does not fit in the image and the attack fails."""
    net, x, y = _never_fooled((3, 6, 24))
    square = _component(net, "square", eps=0.4)
    square.n_queries = 60
    sides: list[int] = []
    build = square.eta
    square.eta = lambda side: (sides.append(side), build(side))[1]
    assert torch.equal(square(x, y), x)
    assert sides == [1] * (6 * 24) + [6] * 51 + [5] * 9
