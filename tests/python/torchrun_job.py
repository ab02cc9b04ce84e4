#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A training script as torchrun runs it (rank, world, master from the
environment): DDP with ina.torch's hook through $INA_SWITCH for a few steps,
then it ends like most scripts do, without closing the hook's context (the
package does at exit). Prints "rank R ok" and exits 0. Run by
test_torchrun.py."""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import ina.torch

torch.set_num_threads(1)
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2)))
state = ina.torch.HookState(timeout_ms=5000)
model.register_comm_hook(state, ina.torch.allreduce_hook)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(rank)
for step in range(int(os.environ.get("STEPS", "5"))):
    x, y = torch.randn(32, 16, generator=g), torch.randint(0, 2, (32,), generator=g)
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
assert state.stats()["rounds"] >= 5
dist.destroy_process_group()
print("rank %d ok (job %d)" % (rank, state.job_id), flush=True)
