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

It resumes the way torchrun's elastic jobs do: with a snapshot path
(--checkpoint, else train_ddp.pt in WEFT_CHECKPOINT_DIR, which weftrun
--restarts sets) rank 0 saves the model, the optimizer, the epochs done and
the RNG state after every epoch (to a temporary file, renamed over the last
snapshot), and every run that finds a snapshot there loads it and goes on
after its epoch, on any number of ranks that divides the batch: the global
batch stays the same, so the loss curve does too, up to rounding.
TORCHELASTIC_RESTART_COUNT (set by weftrun --restarts and by torchrun) only
says which restart this is. --stop-after N leaves after epoch N, as if the job
had been lost, and --epoch-delay MS waits MS milliseconds after each epoch but
the last (once its snapshot is saved), time for a test to lose a host between
two epochs (both for tests).
"""

import argparse
import os
import sys
import time

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


def checkpoint_path(args):
    """The snapshot's path: --checkpoint, else in WEFT_CHECKPOINT_DIR, else None."""
    if args.checkpoint:
        return args.checkpoint
    d = os.environ.get("WEFT_CHECKPOINT_DIR")
    if d is None:
        return None
    if not d:
        sys.exit("train_ddp.py: WEFT_CHECKPOINT_DIR is set but empty; unset it or name a directory")
    return os.path.join(d, "train_ddp.pt")


def restart_count():
    v = os.environ.get("TORCHELASTIC_RESTART_COUNT")
    if v is None:
        return 0
    if not v.isdigit():
        sys.exit("train_ddp.py: TORCHELASTIC_RESTART_COUNT=%r is not a whole number" % v)
    return int(v)


# What decides the model's path: a snapshot of another run is refused.
RUN_KEYS = ("samples", "batch", "hidden", "lr")


def read_snapshot(path, args):
    """The snapshot at path, None if there is none; refuses one of another run."""
    if not path or not os.path.exists(path):
        return None
    try:
        snap = torch.load(path, map_location="cpu")
    except Exception as e:  # a damaged file: say which, do not start over silently
        sys.exit("train_ddp.py: cannot load the snapshot %s (%s); move it away to start over"
                 % (path, e))
    for k in RUN_KEYS:
        if snap["run"][k] != getattr(args, k):
            sys.exit("train_ddp.py: the snapshot %s is of a run with --%s %s, not %s; resume with "
                     "the options it was started with, or use another --checkpoint"
                     % (path, k, snap["run"][k], getattr(args, k)))
    return snap


def load_snapshot(snap, model, opt):
    """The snapshot's state into model and opt: the epochs it holds, 0 without one."""
    if snap is None:
        return 0
    model.load_state_dict(snap["model"])
    opt.load_state_dict(snap["optimizer"])
    torch.set_rng_state(snap["rng"])
    return snap["epochs_run"]


def save_snapshot(path, args, model, opt, epochs_run, size):
    """Rank 0: the snapshot after epochs_run epochs, replacing the last one atomically."""
    snap = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epochs_run": epochs_run,
            "rng": torch.get_rng_state(), "world_size": size,
            "run": {k: getattr(args, k) for k in RUN_KEYS}}
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(tmp, "wb") as f:
            torch.save(snap, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:  # the job ends: a run that cannot save would lose its work unseen
        sys.exit("train_ddp.py: cannot save the snapshot %s: %s" % (path, e))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--samples", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=256, help="global batch, split across ranks")
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--backend", choices=["auto", "gloo", "nccl"], default="auto")
    ap.add_argument("--checkpoint", metavar="PATH",
                    help="snapshot file (default: train_ddp.pt in WEFT_CHECKPOINT_DIR, if set)")
    ap.add_argument("--stop-after", type=int, default=0, metavar="N",
                    help="leave after epoch N, as if the job had been lost")
    ap.add_argument("--epoch-delay", type=int, default=0, metavar="MS",
                    help="wait MS milliseconds after each epoch but the last (tests)")
    args = ap.parse_args()
    if args.epoch_delay < 0:
        sys.exit("train_ddp.py: --epoch-delay %d is negative" % args.epoch_delay)
    snapshot = checkpoint_path(args)
    restarts = restart_count()
    snap = read_snapshot(snapshot, args)

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
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    # Every rank loads the same snapshot (the path is shared by all hosts), before DDP
    # broadcasts rank 0's parameters.
    first = load_snapshot(snap, model, opt)
    if rank == 0 and first:
        print("train_ddp: resuming after epoch %d from %s (restart %d, %d ranks)"
              % (first, snapshot, restarts, size), flush=True)
    elif rank == 0 and restarts:
        print("train_ddp: restart %d found no snapshot%s: starting from epoch 1"
              % (restarts, " at " + snapshot if snapshot else " (no --checkpoint)"), flush=True)
    ddp = DDP(model, device_ids=[local_rank] if cuda else None)
    lossf = torch.nn.BCEWithLogitsLoss()
    share = args.batch // size

    for epoch in range(first + 1, args.epochs + 1):
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
        if snapshot and rank == 0:
            save_snapshot(snapshot, args, model, opt, epoch, size)
        if snapshot:
            dist.barrier()           # no rank goes on (or stops) before the epoch is saved
        if epoch == args.stop_after and epoch < args.epochs:
            if rank == 0:
                print("train_ddp: stopping after epoch %d (--stop-after)" % epoch, flush=True)
            break
        if args.epoch_delay and epoch < args.epochs:
            time.sleep(args.epoch_delay / 1000)
    if rank == 0:
        print("train_ddp: %d ranks, backend %s, master %s:%s" % (size, backend,
              os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
