#!/usr/bin/python3
"""Horovod-style data-parallel training of a small model on synthetic data.

Every rank holds its own shard of a synthetic regression problem and a copy of a
two-layer MLP (numpy, float32). Each step computes the local gradients, fuses them
into one flat buffer (as Horovod's tensor fusion does), averages them across ranks
with a single MPI Allreduce(SUM) / size, and applies SGD. Rank 0 prints the loss
of every step and the median step time. The losses must not depend on whether
Blink's interposer is loaded (scripts/run_mpi.sh), up to float32 rounding of the
reduction order.

Usage: scripts/run_mpi.sh -np 4 -- /usr/bin/python3 scripts/train_data_parallel.py [options]
"""
import argparse
import sys
import time

import numpy as np
from mpi4py import MPI


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--steps", type=int, default=30, help="training steps (default 30)")
    p.add_argument("--hidden", type=int, default=1024, help="hidden units (default 1024)")
    p.add_argument("--features", type=int, default=256, help="input features (default 256)")
    p.add_argument("--batch", type=int, default=64, help="samples per rank per step (default 64)")
    p.add_argument("--lr", type=float, default=0.01, help="learning rate (default 0.01)")
    p.add_argument("--seed", type=int, default=1234, help="data and weight seed (default 1234)")
    args = p.parse_args(argv)
    for name in ("steps", "hidden", "features", "batch"):
        if getattr(args, name) <= 0:
            p.error(f"--{name} must be positive")
    return args


def main(argv):
    args = parse_args(argv)
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()

    # The same teacher and initial weights on every rank; a different data shard each.
    shared = np.random.default_rng(args.seed)
    teacher = shared.standard_normal((args.features, 1)).astype(np.float32)
    w1 = (shared.standard_normal((args.features, args.hidden)) / np.sqrt(args.features)).astype(np.float32)
    w2 = (shared.standard_normal((args.hidden, 1)) / np.sqrt(args.hidden)).astype(np.float32)
    local = np.random.default_rng(args.seed + 1 + rank)

    params = [w1, w2]
    sizes = [p.size for p in params]
    fused = np.empty(sum(sizes), dtype=np.float32)  # one buffer, allocated once
    averaged = np.empty_like(fused)
    times = []
    for step in range(args.steps):
        x = local.standard_normal((args.batch, args.features)).astype(np.float32)
        y = np.tanh(x @ teacher)
        t0 = time.perf_counter()
        h = np.maximum(x @ w1, 0.0)
        pred = h @ w2
        err = pred - y
        loss_local = np.array([float(np.mean(err * err))], dtype=np.float64)
        g_pred = (2.0 / args.batch) * err
        g_w2 = h.T @ g_pred
        g_h = (g_pred @ w2.T) * (h > 0)
        g_w1 = x.T @ g_h
        # Tensor fusion: all gradients in one buffer, one Allreduce.
        at = 0
        for g in (g_w1, g_w2):
            fused[at:at + g.size] = g.ravel()
            at += g.size
        comm.Allreduce(fused, averaged, op=MPI.SUM)
        averaged /= size
        at = 0
        for p, n in zip(params, sizes):
            p -= args.lr * averaged[at:at + n].reshape(p.shape)
            at += n
        loss = np.empty(1, dtype=np.float64)
        comm.Allreduce(loss_local, loss, op=MPI.SUM)  # 8 bytes: below Blink's threshold
        times.append(time.perf_counter() - t0)
        if rank == 0:
            print(f"step {step:3d} loss {loss[0] / size:.6f}", flush=True)
    if rank == 0:
        print(f"ranks {size}, gradient buffer {fused.nbytes} bytes, "
              f"median step time {1e3 * float(np.median(times)):.2f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
