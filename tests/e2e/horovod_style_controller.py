"""A Horovod-style controller loop in mpi4py (what Horovod's MPI controller does every
cycle, without Horovod): bit-vector negotiation with MPI_Allreduce on MPI_LONG_LONG_INT
with MPI_BAND and MPI_BOR, then MPI_Allgatherv of each rank's variable-length response
list, plus a barrier now and then. Every result is checked against values computed
locally; rank 0 prints one digest line per kind and "N wrong" at the end (the same
lines with or without libblink_mpi.so preloaded), and the exit status is 1 if any rank
saw a wrong result. Usage: python3 horovod_style_controller.py [CYCLES]"""
import sys
import zlib

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
cycles = int(sys.argv[1]) if len(sys.argv) > 1 else 400
wrong = 0
digests = {"band": 0, "bor": 0, "allgatherv": 0}


def bits(r, cycle, words):
    """Rank r's cache bit vector in this cycle: a word pattern from r and the cycle."""
    v = np.arange(words, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    v ^= np.uint64((cycle * 7919 + r * 104729) & 0xFFFFFFFFFFFF)
    v |= np.uint64(1) << np.uint64(cycle % 64)
    return v.view(np.int64)


for cycle in range(cycles):
    words = 1 + cycle % 4  # Horovod's vectors: a few 64-bit words
    mine = bits(rank, cycle, words)
    want_and = bits(0, cycle, words).copy()
    want_or = bits(0, cycle, words).copy()
    for r in range(1, size):
        want_and &= bits(r, cycle, words)
        want_or |= bits(r, cycle, words)
    got = np.empty(words, dtype=np.int64)
    comm.Allreduce([mine, MPI.LONG_LONG], [got, MPI.LONG_LONG], op=MPI.BAND)
    wrong += int(np.count_nonzero(got != want_and))
    digests["band"] = zlib.crc32(got.tobytes(), digests["band"])
    inplace = mine.copy()
    comm.Allreduce(MPI.IN_PLACE, [inplace, MPI.LONG_LONG], op=MPI.BOR)
    wrong += int(np.count_nonzero(inplace != want_or))
    digests["bor"] = zlib.crc32(inplace.tobytes(), digests["bor"])

    # The responses: each rank's list of names, of a length that varies per rank.
    # (The last rank has nothing to say every fifth cycle.)
    counts = [0 if r == size - 1 and cycle % 5 == 0 else (cycle * 13 + r * 29) % 97 + 1
              for r in range(size)]
    displs = [sum(counts[:r]) for r in range(size)]
    payload = lambda r: np.frombuffer(  # noqa: E731
        (("tensor.%d.%d;" % (r, cycle)) * 20).encode()[: counts[r]], dtype=np.uint8)
    send = payload(rank)
    recv = np.zeros(sum(counts), dtype=np.uint8)
    comm.Allgatherv([send, MPI.BYTE], [recv, counts, displs, MPI.BYTE])
    want = np.concatenate([payload(r) for r in range(size)])
    wrong += int(np.count_nonzero(recv != want))
    digests["allgatherv"] = zlib.crc32(recv.tobytes(), digests["allgatherv"])
    if cycle % 50 == 0:
        comm.Barrier()

total = comm.allreduce(wrong, op=MPI.SUM)
if rank == 0:
    for name in ("band", "bor", "allgatherv"):
        print("%s digest %08x" % (name, digests[name]))
    print("%d cycles, %d wrong" % (cycles, total))
sys.exit(1 if total else 0)
