# SPDX-License-Identifier: BSD-3-Clause
# A PyTorch DDP job (gloo, CPU) that reads only the torchrun variables:
# RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, LOCAL_RANK (env:// init).
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

torch.set_num_threads(1)
local_rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("gloo", init_method="env://")
rank, size = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = DDP(torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.full((4, 8), float(rank + 1))
loss = model(x).pow(2).mean()
loss.backward()
opt.step()
# gradients are averaged: every rank holds the same weights afterwards
w = model.module.weight.detach().clone()
ws = [torch.zeros_like(w) for _ in range(size)]
dist.all_gather(ws, w)
assert all(torch.allclose(ws[0], v) for v in ws), "weights differ between ranks"
if rank == 0:
    print(f"ddp ok: {size} ranks, local rank {local_rank}, "
          f"master {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}")
dist.destroy_process_group()
