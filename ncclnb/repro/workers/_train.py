"""A training loop cut to the bone, shared by the workers: a tiny model whose
gradients are averaged with all_reduce, as DDP does."""

from __future__ import annotations


def train_steps(job, steps: int, width: int = 64, group=None) -> None:
    """``steps`` steps of a linear model on random data; one all_reduce per step."""
    import torch
    import torch.distributed as dist

    torch.manual_seed(1234)
    model = torch.nn.Linear(width, 1).to(job.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    world = dist.get_world_size(group)
    for step in range(steps):
        x = torch.randn(32, width, device=job.device)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad, group=group)
            p.grad /= world
        opt.step()
    job.say(f"[rank{job.rank}] trained {steps} steps, loss {loss.item():.4f}")
