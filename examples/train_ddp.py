#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""train_ddp.py: data-parallel training with PyTorch DistributedDataParallel,
started by weftrun (or torchrun) and reading only torchrun's variables:
RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT.

    weftrun -np 4 python3 train_ddp.py                   # gloo on CPU, NCCL on GPUs
    weftrun -np 16 --hostfile hosts python3 train_ddp.py --epochs 20

A small multilayer perceptron learns a synthetic binary classification task.
Each global batch is cut into one share per rank and DDP averages the
gradients, so the loss curve is the same on 1, 2 or 4 ranks up to rounding.
With CUDA each rank uses device LOCAL_RANK (weftrun orders CUDA_VISIBLE_DEVICES
so that this is the GPU next to the rank's cores and NIC) and the NCCL
backend; without it, gloo on the CPU. weftrun sets NCCL_SOCKET_IFNAME and
GLOO_SOCKET_IFNAME to the interface that reaches the other hosts.
"""

import argparse
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def env_int(name):
    try:
        return int(os.environ[name])
    except KeyError:
        sys.exit("train_ddp.py: %s is not set; start it with weftrun or torchrun" % name)
    except ValueError:
        sys.exit("train_ddp.py: %s=%r is not a number" % (name, os.environ[name]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--samples", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=256, help="global batch, split across ranks")
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--backend", choices=["auto", "gloo", "nccl"], default="auto")
    args = ap.parse_args()

    rank, size, local_rank = env_int("RANK"), env_int("WORLD_SIZE"), env_int("LOCAL_RANK")
    for name in ("MASTER_ADDR", "MASTER_PORT"):
        if name not in os.environ:
            sys.exit("train_ddp.py: %s is not set; start it with weftrun or torchrun" % name)
    if args.batch % size or args.samples % args.batch:
        sys.exit("train_ddp.py: --batch %d must divide --samples %d and be a multiple of the "
                 "%d ranks" % (args.batch, args.samples, size))
    cuda = torch.cuda.is_available() and args.backend != "gloo"
    backend = args.backend if args.backend != "auto" else "nccl" if cuda else "gloo"
    if backend == "nccl" and not cuda:
        sys.exit("train_ddp.py: --backend nccl needs CUDA, and torch sees no GPU")
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
    dist.init_process_group(backend, init_method="env://", rank=rank, world_size=size)

    # The same data set and initial model on every rank (fixed seeds).
    gen = torch.Generator().manual_seed(1234)
    x = torch.rand(args.samples, 8, generator=gen) * 2 - 1
    y = ((x[:, 0] * x[:, 1] + 0.5 * x[:, 2]) > 0).float().unsqueeze(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, args.hidden), torch.nn.Tanh(),
                                torch.nn.Linear(args.hidden, 1)).to(device)
    ddp = DDP(model, device_ids=[local_rank] if cuda else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr)
    lossf = torch.nn.BCEWithLogitsLoss()
    share = args.batch // size

    for epoch in range(1, args.epochs + 1):
        total = torch.zeros(1, device=device)
        for start in range(0, args.samples, args.batch):
            lo = start + rank * share
            xb, yb = x[lo:lo + share].to(device), y[lo:lo + share].to(device)
            opt.zero_grad()
            loss = lossf(ddp(xb), yb)
            loss.backward()          # DDP averages the gradients over the ranks here
            opt.step()
            total += loss.detach()
        dist.all_reduce(total)       # the mean loss over all ranks and batches, for the log
        if rank == 0:
            print("epoch %d loss %.6f" % (epoch, total.item() / size / (args.samples // args.batch)),
                  flush=True)
    if rank == 0:
        print("train_ddp: %d ranks, backend %s, master %s:%s" % (size, backend,
              os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
