# SPDX-License-Identifier: BSD-3-Clause
# An mpi4py job under weftrun: ranks agree with Open MPI and with the torchrun
# variables weft sets, and an allreduce adds up.
import os
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
assert int(os.environ["RANK"]) == rank, "RANK differs from the MPI rank"
assert int(os.environ["WORLD_SIZE"]) == size, "WORLD_SIZE differs from the MPI size"
total = comm.allreduce(rank + 1, op=MPI.SUM)
assert total == size * (size + 1) // 2, f"allreduce gave {total}"
hosts = comm.gather(MPI.Get_processor_name(), root=0)
if rank == 0:
    print(f"mpi4py ok: {size} ranks, sum {total}, hosts {sorted(set(hosts))}")
sys.stdout.flush()
