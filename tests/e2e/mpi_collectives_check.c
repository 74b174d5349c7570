/* An MPI program that knows nothing of Blink (only mpi.h): it calls every
 * collective libblink_mpi.so interposes, with many datatypes, ops, counts,
 * in-place forms, split and duplicated communicators, a user-defined op and types
 * Blink must leave to MPI, and checks every result itself against values it
 * computes locally in the type's own arithmetic. Rank 0 prints one line per check
 * (the same lines with or without the interposer) and the program exits non-zero
 * if any rank saw a wrong element. The file is also C++ (tests/e2e/mpi_linked_check.cpp
 * builds it as a C++ program linked with -lblink_mpi). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank, g_size, g_failures, g_checks;

static void report(MPI_Comm comm, const char* what, int local_bad) {
  int bad = 0;
  PMPI_Allreduce(&local_bad, &bad, 1, MPI_INT, MPI_MAX, comm);
  int rank;
  MPI_Comm_rank(comm, &rank);
  ++g_checks;
  if (bad) ++g_failures;
  if (g_rank == 0 && rank == 0) printf("%s: %s\n", what, bad ? "WRONG" : "ok");
}

/* The value rank r contributes at index i: small integers, so floating sums are
 * exact in any order; products use factors 1, 2 and -1. */
static long value(int r, long i, int for_prod) {
  if (for_prod) return (i + r) % 3 == 0 ? 2 : ((i + r) % 5 == 0 ? -1 : 1);
  return (i * 7 + r * 3) % 9 - 4;
}

#define REDUCTION_CHECKS(CT, MT, NAME, UNSIGNED)                                              \
  static void check_##NAME(MPI_Comm comm, long count) {                                       \
    if (count <= 0) return;                                                                   \
    int rank, size;                                                                           \
    MPI_Comm_rank(comm, &rank);                                                               \
    MPI_Comm_size(comm, &size);                                                               \
    MPI_Op ops[4] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};                                    \
    const char* op_names[4] = {"sum", "prod", "min", "max"};                                  \
    CT* in = (CT*)malloc(sizeof(CT) * (size_t)count * (size_t)size);                          \
    CT* out = (CT*)malloc(sizeof(CT) * (size_t)count * (size_t)size);                         \
    CT* want = (CT*)malloc(sizeof(CT) * (size_t)count * (size_t)size);                        \
    for (int o = 0; o < 4; ++o) {                                                             \
      int prod = o == 1;                                                                      \
      long n = count * size; /* reduce_scatter_block needs size blocks */                     \
      for (long i = 0; i < n; ++i) {                                                          \
        long base = UNSIGNED && !prod ? 4 : 0;                                                \
        in[i] = (CT)(value(rank, i, prod) + base);                                            \
        CT acc = (CT)(value(0, i, prod) + base);                                              \
        for (int r = 1; r < size; ++r) {                                                      \
          CT v = (CT)(value(r, i, prod) + base);                                              \
          if (o == 0) acc = (CT)(acc + v);                                                    \
          if (o == 1) acc = (CT)(acc * v);                                                    \
          if (o == 2) acc = v < acc ? v : acc;                                                \
          if (o == 3) acc = v > acc ? v : acc;                                                \
        }                                                                                     \
        want[i] = acc;                                                                        \
      }                                                                                       \
      char what[160];                                                                         \
      int bad = 0;                                                                            \
      /* Allreduce, out of place and in place. */                                             \
      memset(out, 0x7b, sizeof(CT) * (size_t)count);                                          \
      MPI_Allreduce(in, out, (int)count, MT, ops[o], comm);                                   \
      for (long i = 0; i < count; ++i) bad |= out[i] != want[i];                              \
      memcpy(out, in, sizeof(CT) * (size_t)count);                                            \
      MPI_Allreduce(MPI_IN_PLACE, out, (int)count, MT, ops[o], comm);                         \
      for (long i = 0; i < count; ++i) bad |= out[i] != want[i];                              \
      snprintf(what, sizeof what, "allreduce %s %s count %ld", #NAME, op_names[o], count);    \
      report(comm, what, bad);                                                                \
      /* Reduce to the last rank, out of place and in place. */                               \
      bad = 0;                                                                                \
      int root = size - 1;                                                                    \
      memset(out, 0, sizeof(CT) * (size_t)count);                                             \
      MPI_Reduce(in, rank == root ? out : NULL, (int)count, MT, ops[o], root, comm);          \
      if (rank == root)                                                                       \
        for (long i = 0; i < count; ++i) bad |= out[i] != want[i];                            \
      memcpy(out, in, sizeof(CT) * (size_t)count);                                            \
      MPI_Reduce(rank == root ? MPI_IN_PLACE : in, rank == root ? out : NULL, (int)count, MT, \
                 ops[o], root, comm);                                                         \
      if (rank == root)                                                                       \
        for (long i = 0; i < count; ++i) bad |= out[i] != want[i];                            \
      snprintf(what, sizeof what, "reduce %s %s count %ld", #NAME, op_names[o], count);       \
      report(comm, what, bad);                                                                \
      /* Reduce_scatter_block, out of place and in place. */                                  \
      bad = 0;                                                                                \
      MPI_Reduce_scatter_block(in, out, (int)count, MT, ops[o], comm);                        \
      for (long i = 0; i < count; ++i) bad |= out[i] != want[rank * count + i];               \
      memcpy(out, in, sizeof(CT) * (size_t)n);                                                \
      MPI_Reduce_scatter_block(MPI_IN_PLACE, out, (int)count, MT, ops[o], comm);              \
      for (long i = 0; i < count; ++i) bad |= out[i] != want[rank * count + i];               \
      snprintf(what, sizeof what, "reduce_scatter_block %s %s count %ld", #NAME, op_names[o], \
               count);                                                                        \
      report(comm, what, bad);                                                                \
    }                                                                                         \
    free(in);                                                                                 \
    free(out);                                                                                \
    free(want);                                                                               \
  }

REDUCTION_CHECKS(int, MPI_INT, int, 0)
REDUCTION_CHECKS(long, MPI_LONG, long, 0)
REDUCTION_CHECKS(unsigned, MPI_UNSIGNED, unsigned, 1)
REDUCTION_CHECKS(short, MPI_SHORT, short, 0)
REDUCTION_CHECKS(signed char, MPI_SIGNED_CHAR, signed_char, 0)
REDUCTION_CHECKS(uint16_t, MPI_UINT16_T, uint16, 1)
REDUCTION_CHECKS(int64_t, MPI_INT64_T, int64, 0)
REDUCTION_CHECKS(unsigned long long, MPI_UNSIGNED_LONG_LONG, ulonglong, 1)
REDUCTION_CHECKS(float, MPI_FLOAT, float, 0)
REDUCTION_CHECKS(double, MPI_DOUBLE, double, 0)

/* Bcast and Allgather move bytes: any contiguous type, derived ones included. */
static void check_movement(MPI_Comm comm, long count) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  char what[160];
  size_t bytes = (size_t)count * 8;
  unsigned char* buf = (unsigned char*)malloc(bytes * (size_t)size);
  unsigned char* want = (unsigned char*)malloc(bytes * (size_t)size);
  MPI_Datatype pair; /* a derived contiguous type: 2 ints */
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  for (int root = 0; root<size; root += size> 2 ? size - 1 : 1) {
    for (size_t i = 0; i < bytes; ++i) want[i] = (unsigned char)(i * 31 + (size_t)root * 7);
    int bad = 0;
    memcpy(buf, rank == root ? want : buf, bytes);
    if (rank != root) memset(buf, 0, bytes);
    MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, comm);
    bad |= memcmp(buf, want, bytes) != 0;
    if (rank != root) memset(buf, 0, bytes);
    MPI_Bcast(buf, (int)bytes, MPI_CHAR, root, comm);
    bad |= memcmp(buf, want, bytes) != 0;
    if (rank != root) memset(buf, 0, bytes);
    MPI_Bcast(buf, (int)count, pair, root, comm);
    bad |= memcmp(buf, want, bytes) != 0;
    snprintf(what, sizeof what, "bcast byte/char/contiguous root %d count %ld", root, count);
    report(comm, what, bad);
  }
  /* Allgather: out of place, in place, and with a derived type. */
  int bad = 0;
  unsigned char* mine = (unsigned char*)malloc(bytes);
  for (size_t i = 0; i < bytes; ++i) mine[i] = (unsigned char)(i + (size_t)rank * 13);
  for (int r = 0; r < size; ++r)
    for (size_t i = 0; i < bytes; ++i)
      want[(size_t)r * bytes + i] = (unsigned char)(i + (size_t)r * 13);
  memset(buf, 0, bytes * (size_t)size);
  MPI_Allgather(mine, (int)bytes, MPI_BYTE, buf, (int)bytes, MPI_BYTE, comm);
  bad |= memcmp(buf, want, bytes * (size_t)size) != 0;
  memset(buf, 0, bytes * (size_t)size);
  memcpy(buf + (size_t)rank * bytes, mine, bytes);
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, (int)count, pair, comm);
  bad |= memcmp(buf, want, bytes * (size_t)size) != 0;
  snprintf(what, sizeof what, "allgather byte/contiguous count %ld", count);
  report(comm, what, bad);
  MPI_Type_free(&pair);
  free(mine);
  free(buf);
  free(want);
}

/* The bitwise and logical ops on integer types (Blink takes them), against C's own
 * operators; long long is what Horovod's bit vectors use. */
#define BITWISE_CHECKS(CT, MT, NAME)                                                             \
  static void check_bitwise_##NAME(MPI_Comm comm, long count) {                                  \
    if (count <= 0) return;                                                                      \
    int rank, size;                                                                              \
    MPI_Comm_rank(comm, &rank);                                                                  \
    MPI_Comm_size(comm, &size);                                                                  \
    MPI_Op ops[6] = {MPI_BAND, MPI_BOR, MPI_BXOR, MPI_LAND, MPI_LOR, MPI_LXOR};                  \
    const char* op_names[6] = {"band", "bor", "bxor", "land", "lor", "lxor"};                    \
    CT* in = (CT*)malloc(sizeof(CT) * (size_t)count);                                            \
    CT* out = (CT*)malloc(sizeof(CT) * (size_t)count);                                           \
    CT* want = (CT*)malloc(sizeof(CT) * (size_t)count);                                          \
    for (int o = 0; o < 6; ++o) {                                                                \
      for (long i = 0; i < count; ++i) {                                                         \
        /* Bit patterns from the index and rank; every fourth element zero on some rank. */      \
        in[i] = (i + rank) % 4 == 0 ? (CT)0                                                      \
                                    : (CT)((unsigned long long)(i * 2654435761u) >> (rank % 5)); \
        CT acc = 0;                                                                              \
        for (int r = 0; r < size; ++r) {                                                         \
          CT v =                                                                                 \
              (i + r) % 4 == 0 ? (CT)0 : (CT)((unsigned long long)(i * 2654435761u) >> (r % 5)); \
          if (r == 0) {                                                                          \
            acc = v;                                                                             \
            continue;                                                                            \
          }                                                                                      \
          if (o == 0) acc = (CT)(acc & v);                                                       \
          if (o == 1) acc = (CT)(acc | v);                                                       \
          if (o == 2) acc = (CT)(acc ^ v);                                                       \
          if (o == 3) acc = (CT)(acc && v);                                                      \
          if (o == 4) acc = (CT)(acc || v);                                                      \
          if (o == 5) acc = (CT)(!acc != !v);                                                    \
        }                                                                                        \
        want[i] = acc;                                                                           \
      }                                                                                          \
      int bad = 0;                                                                               \
      memset(out, 0x5a, sizeof(CT) * (size_t)count);                                             \
      MPI_Allreduce(in, out, (int)count, MT, ops[o], comm);                                      \
      for (long i = 0; i < count; ++i) bad |= out[i] != want[i];                                 \
      memcpy(out, in, sizeof(CT) * (size_t)count);                                               \
      MPI_Allreduce(MPI_IN_PLACE, out, (int)count, MT, ops[o], comm);                            \
      for (long i = 0; i < count; ++i) bad |= out[i] != want[i];                                 \
      char what[160];                                                                            \
      snprintf(what, sizeof what, "allreduce %s %s count %ld", #NAME, op_names[o], count);       \
      report(comm, what, bad);                                                                   \
    }                                                                                            \
    free(in);                                                                                    \
    free(out);                                                                                   \
    free(want);                                                                                  \
  }

BITWISE_CHECKS(long long, MPI_LONG_LONG_INT, long_long)
BITWISE_CHECKS(unsigned char, MPI_UNSIGNED_CHAR, unsigned_char)
BITWISE_CHECKS(int, MPI_INT, int)

/* The byte of rank r's element i in the vector collectives. */
static unsigned char vbyte(int r, size_t i) {
  return (unsigned char)(i * 31 + (size_t)r * 101 + 7);
}

/* Allgatherv, Gather, Gatherv with uneven blocks (rank r sends count + r * 3 ints, the
 * last rank none when count is small), placed at displacements with gaps, out of
 * place and in place, to the first and last root; and Barrier. */
static void check_vector(MPI_Comm comm, long count) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int* counts = (int*)malloc(sizeof(int) * (size_t)size);
  int* displs = (int*)malloc(sizeof(int) * (size_t)size);
  long total = 0;
  for (int r = 0; r < size; ++r) {
    counts[r] = (int)(count + r * 3);
    if (count < 10 && r == size - 1 && size > 1) counts[r] = 0;
    displs[r] = (int)total + 2; /* a gap of two ints before each block */
    total += counts[r] + 2;
  }
  int* mine = (int*)malloc(sizeof(int) * (size_t)(counts[rank] + 1));
  int* buf = (int*)malloc(sizeof(int) * (size_t)total);
  int* want = (int*)malloc(sizeof(int) * (size_t)total);
  for (int i = 0; i < counts[rank]; ++i) mine[i] = (int)vbyte(rank, (size_t)i) * 65537 - rank;
  for (long k = 0; k < total; ++k) want[k] = -1;
  for (int r = 0; r < size; ++r)
    for (int i = 0; i < counts[r]; ++i) want[displs[r] + i] = (int)vbyte(r, (size_t)i) * 65537 - r;
  char what[160];
  int bad = 0;
  for (long k = 0; k < total; ++k) buf[k] = -1;
  MPI_Allgatherv(mine, counts[rank], MPI_INT, buf, counts, displs, MPI_INT, comm);
  bad |= memcmp(buf, want, sizeof(int) * (size_t)total) != 0;
  for (long k = 0; k < total; ++k) buf[k] = -1;
  memcpy(buf + displs[rank], mine, sizeof(int) * (size_t)counts[rank]);
  MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs, MPI_INT, comm);
  bad |= memcmp(buf, want, sizeof(int) * (size_t)total) != 0;
  snprintf(what, sizeof what, "allgatherv int count %ld", count);
  report(comm, what, bad);

  for (int root = 0; root<size; root += size> 1 ? size - 1 : 1) {
    bad = 0;
    for (long k = 0; k < total; ++k) buf[k] = -1;
    MPI_Gatherv(mine, counts[rank], MPI_INT, rank == root ? buf : NULL, counts, displs, MPI_INT,
                root, comm);
    if (rank == root) bad |= memcmp(buf, want, sizeof(int) * (size_t)total) != 0;
    for (long k = 0; k < total; ++k) buf[k] = -1;
    if (rank == root) memcpy(buf + displs[rank], mine, sizeof(int) * (size_t)counts[rank]);
    MPI_Gatherv(rank == root ? MPI_IN_PLACE : mine, counts[rank], MPI_INT, buf, counts, displs,
                MPI_INT, root, comm);
    if (rank == root) bad |= memcmp(buf, want, sizeof(int) * (size_t)total) != 0;
    /* Gather: equal blocks of `count` ints. */
    int* gathered = (int*)malloc(sizeof(int) * (size_t)(count * size + 1));
    int* mine_eq = (int*)malloc(sizeof(int) * (size_t)(count + 1));
    for (long i = 0; i < count; ++i) mine_eq[i] = (int)vbyte(rank, (size_t)i) + rank * 1000;
    memset(gathered, 0, sizeof(int) * (size_t)(count * size));
    MPI_Datatype block; /* the root receives each rank's ints as one derived item */
    MPI_Type_contiguous((int)count, MPI_INT, &block);
    MPI_Type_commit(&block);
    MPI_Gather(mine_eq, (int)count, MPI_INT, gathered, 1, block, root, comm);
    MPI_Type_free(&block);
    if (rank == root)
      for (int r = 0; r < size; ++r)
        for (long i = 0; i < count; ++i)
          bad |= gathered[r * count + i] != (int)vbyte(r, (size_t)i) + r * 1000;
    memset(gathered, 0, sizeof(int) * (size_t)(count * size));
    if (rank == root) memcpy(gathered + rank * count, mine_eq, sizeof(int) * (size_t)count);
    MPI_Gather(rank == root ? MPI_IN_PLACE : mine_eq, (int)count, MPI_INT, gathered, (int)count,
               MPI_INT, root, comm);
    if (rank == root)
      for (int r = 0; r < size; ++r)
        for (long i = 0; i < count; ++i)
          bad |= gathered[r * count + i] != (int)vbyte(r, (size_t)i) + r * 1000;
    free(gathered);
    free(mine_eq);
    snprintf(what, sizeof what, "gather gatherv int root %d count %ld", root, count);
    report(comm, what, bad);
  }

  /* Reduce_scatter with uneven counts (sums of ints; the last rank may get none). */
  bad = 0;
  long n = 0;
  for (int r = 0; r < size; ++r) n += counts[r];
  int* rin = (int*)malloc(sizeof(int) * (size_t)(n + 1));
  int* rout = (int*)malloc(sizeof(int) * (size_t)(n + 1));
  for (long i = 0; i < n; ++i) rin[i] = (int)((i * 7 + rank * 3) % 11) - 5;
  long first = 0;
  for (int r = 0; r < rank; ++r) first += counts[r];
  MPI_Reduce_scatter(rin, rout, counts, MPI_INT, MPI_SUM, comm);
  for (int i = 0; i < counts[rank]; ++i) {
    int w = 0;
    for (int r = 0; r < size; ++r) w += (int)(((first + i) * 7 + r * 3) % 11) - 5;
    bad |= rout[i] != w;
  }
  memcpy(rout, rin, sizeof(int) * (size_t)n);
  MPI_Reduce_scatter(MPI_IN_PLACE, rout, counts, MPI_INT, MPI_SUM, comm);
  for (int i = 0; i < counts[rank]; ++i) {
    int w = 0;
    for (int r = 0; r < size; ++r) w += (int)(((first + i) * 7 + r * 3) % 11) - 5;
    bad |= rout[i] != w;
  }
  /* Equal counts: a Reduce_scatter_block in all but name. */
  int* equal = (int*)malloc(sizeof(int) * (size_t)size);
  for (int r = 0; r < size; ++r) equal[r] = (int)count;
  if (count * size <= n) {
    for (long i = 0; i < count * size; ++i) rin[i] = (int)(i % 13) + rank;
    MPI_Reduce_scatter(rin, rout, equal, MPI_INT, MPI_MAX, comm);
    for (long i = 0; i < count; ++i) bad |= rout[i] != (int)((rank * count + i) % 13) + size - 1;
  }
  free(equal);
  free(rin);
  free(rout);
  snprintf(what, sizeof what, "reduce_scatter int count %ld", count);
  report(comm, what, bad);

  /* Barrier, and the nonblocking collectives (MPI's). */
  MPI_Barrier(comm);
  bad = 0;
  long long v = rank + 1, sum = 0;
  MPI_Request req;
  MPI_Iallreduce(&v, &sum, 1, MPI_LONG_LONG_INT, MPI_SUM, comm, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  bad |= sum != (long long)size * (size + 1) / 2;
  v = rank == 0 ? 4242 : 0;
  MPI_Ibcast(&v, 1, MPI_LONG_LONG_INT, 0, comm, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  bad |= v != 4242;
  report(comm, "barrier iallreduce ibcast", bad);
  free(counts);
  free(displs);
  free(mine);
  free(buf);
  free(want);
}

/* What Blink must leave to MPI: a user-defined op, MAXLOC on pair types, types
 * whose signature is not a run of one predefined type, logical and bitwise ops;
 * and a strided vector type, which Blink takes (packed). */
static void my_sum(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  for (int i = 0; i < *len; ++i) ((int*)inout)[i] += ((int*)in)[i];
}

static void check_fallbacks(MPI_Comm comm) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  enum { N = 20000 };
  static int in[N], out[N];
  int bad = 0;
  MPI_Op op;
  MPI_Op_create(my_sum, 1, &op);
  for (int i = 0; i < N; ++i) in[i] = i % 7 + rank;
  MPI_Allreduce(in, out, N, MPI_INT, op, comm);
  for (int i = 0; i < N; ++i) bad |= out[i] != size * (i % 7) + size * (size - 1) / 2;
  MPI_Op_free(&op);
  report(comm, "allreduce user-defined op", bad);

  static struct pair_int { int v, r; } pin[N], pout[N];
  bad = 0;
  for (int i = 0; i < N; ++i) pin[i].v = (i + rank) % size, pin[i].r = rank;
  MPI_Allreduce(pin, pout, N, MPI_2INT, MPI_MAXLOC, comm);
  for (int i = 0; i < N; ++i) {
    int best_r = -1;
    for (int r = 0; r < size; ++r)
      if ((i + r) % size == size - 1) {
        best_r = r;
        break;
      }
    bad |= pout[i].v != size - 1 || pout[i].r != best_r;
  }
  report(comm, "allreduce maxloc 2int", bad);

  static struct double_int {
    double v;
    int r;
  } din[N], dout[N];
  bad = 0;
  for (int i = 0; i < N; ++i) din[i].v = (i + rank) % size, din[i].r = rank;
  MPI_Allreduce(din, dout, N, MPI_DOUBLE_INT, MPI_MINLOC, comm);
  for (int i = 0; i < N; ++i) {
    int best_r = -1;
    for (int r = 0; r < size && best_r < 0; ++r)
      if ((i + r) % size == 0) best_r = r;
    bad |= dout[i].v != 0 || dout[i].r != best_r;
  }
  report(comm, "allreduce minloc double_int", bad);
  bad = 0;
  for (int i = 0; i < N; ++i) dout[i].v = rank == 0 ? i : -1, dout[i].r = rank == 0 ? -i : 1;
  MPI_Bcast(dout, N, MPI_DOUBLE_INT, 0, comm);
  for (int i = 0; i < N; ++i) bad |= dout[i].v != i || dout[i].r != -i;
  report(comm, "bcast double_int", bad);

  bad = 0;
  for (int i = 0; i < N; ++i) in[i] = (rank + i) % 2;
  MPI_Allreduce(in, out, N, MPI_INT, MPI_LOR, comm);
  for (int i = 0; i < N; ++i) bad |= out[i] != (size > 1 ? 1 : i % 2);
  MPI_Allreduce(in, out, N, MPI_INT, MPI_BAND, comm);
  for (int i = 0; i < N; ++i) bad |= out[i] != (size > 1 ? 0 : i % 2);
  report(comm, "allreduce lor band", bad);

  MPI_Datatype strided;
  MPI_Type_vector(N / 2, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  bad = 0;
  for (int i = 0; i < N; ++i) out[i] = rank == 0 ? i : -1;
  MPI_Bcast(out, 1, strided, 0, comm);
  for (int i = 0; i < N; ++i) bad |= out[i] != (i % 2 == 0 || rank == 0 ? i : -1);
  MPI_Type_free(&strided);
  report(comm, "bcast strided vector", bad);
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  MPI_Comm half, dup;
  MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_size - g_rank, &half);
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  /* 300007: the 4- and 8-byte types' Reduce passes the interposer's 1 MiB threshold. */
  const long counts[] = {1, 3, 1000, 5003, 100003, 300007};
  MPI_Comm comms[] = {MPI_COMM_WORLD, half, dup};
  const char* comm_names[] = {"world", "half", "dup"};
  for (int c = 0; c < 3; ++c) {
    if (g_rank == 0) printf("== communicator %s\n", comm_names[c]);
    for (int k = 0; k < (int)(sizeof counts / sizeof counts[0]); ++k) {
      long n = counts[k];
      if (c > 0 && n > 5003) continue;
      check_int(comms[c], n);
      check_float(comms[c], n);
      check_movement(comms[c], n);
      check_bitwise_long_long(comms[c], n);
      check_vector(comms[c], n);
      if (c == 0) {
        check_long(comms[c], n);
        check_unsigned(comms[c], n);
        check_short(comms[c], n);
        check_signed_char(comms[c], n);
        check_uint16(comms[c], n);
        check_int64(comms[c], n);
        check_ulonglong(comms[c], n);
        check_double(comms[c], n);
        check_bitwise_unsigned_char(comms[c], n);
        check_bitwise_int(comms[c], n);
      }
    }
    check_vector(comms[c], 0); /* zero-byte blocks, some or all */
    check_fallbacks(comms[c]);
  }
  /* 16 MiB: a bit vector of that size, and vector collectives gathering that much. */
  if (g_rank == 0) printf("== communicator world, 16 MiB\n");
  check_bitwise_long_long(MPI_COMM_WORLD, 2L << 20);
  check_vector(MPI_COMM_WORLD, (4L << 20) / g_size);
  MPI_Comm_free(&half);
  MPI_Comm_free(&dup);
  if (g_rank == 0) printf("%d checks, %d wrong\n", g_checks, g_failures);
  MPI_Finalize();
  return g_failures ? 1 : 0;
}
