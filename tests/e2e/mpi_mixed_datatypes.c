/* A legal MPI program that knows only mpi.h and gives its ranks different
 * datatypes of equal signature in one collective call: N MPI_INT on one rank,
 * one MPI_Type_contiguous(N, MPI_INT), N/4 of MPI_Type_contiguous(4, MPI_INT) or
 * one MPI_Type_vector(N, 1, 2, MPI_INT) on others (and likewise for MPI_FLOAT and
 * MPI_DOUBLE). MPI requires only matching signatures, so every call must finish
 * with exact results (small integers: exact in any order) and the gaps of strided
 * layouts untouched. Bcast, Allgather (the send and receive types differing per
 * rank), Allreduce, Reduce and Reduce_scatter_block, in place and out of place,
 * below and above the interposer's default thresholds.
 *
 * Open MPI rejects predefined ops on derived datatypes (MPI_ERR_OP), so a native
 * run takes --plain-reductions: every rank reduces plain MPI_INT/MPI_FLOAT (the
 * printed lines stay the same), which checks the checks.
 *
 * Rank 0 prints one line per check, then "calls COLLECTIVE=N ..." (every call
 * of each collective this program made, its own result checks included) and
 * "N checks, M wrong". An alarm ends a hung run. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kTimeLimitS = 240, kLayouts = 4, kSentinel = -7 };
static const char* layout_names[kLayouts] = {"plain", "chunks", "whole", "strided"};

/* How one rank lays out m elements of a predefined type: count items of `type`,
 * each holding per_item elements `stride` apart, items `extent` elements apart. */
typedef struct {
  MPI_Datatype type;
  int count, per_item, stride, extent, derived;
} view_t;

static int g_rank, g_size, g_checks, g_failures, g_plain_reductions;
static long g_calls_allreduce, g_calls_bcast, g_calls_reduce, g_calls_allgather, g_calls_rsb;
static long g_bcast_not_run; /* Bcasts whose signature is no run of one predefined type */

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "mpi_mixed_datatypes: time limit reached (a collective hangs)\n";
  ssize_t ignored = write(2, msg, sizeof msg - 1);
  (void)ignored;
  _exit(3);
}

/* m elements (m a multiple of 4) of `base` in layout l (0 plain .. 3 strided). */
static view_t make_view(int l, MPI_Datatype base, int m) {
  view_t v = {base, m, 1, 1, 1, 0};
  if (l == 1) {
    MPI_Type_contiguous(4, base, &v.type);
    v = (view_t){v.type, m / 4, 4, 1, 4, 1};
  } else if (l == 2) {
    MPI_Type_contiguous(m, base, &v.type);
    v = (view_t){v.type, 1, m, 1, m, 1};
  } else if (l == 3) {
    MPI_Type_vector(m, 1, 2, base, &v.type);
    v = (view_t){v.type, 1, m, 2, 2 * m - 1, 1};
  }
  if (v.derived) MPI_Type_commit(&v.type);
  return v;
}

static void free_view(view_t* v) {
  if (v->derived) MPI_Type_free(&v->type);
}

/* Where logical element i of a buffer of items laid out as v lives. */
static size_t at(const view_t* v, long i) {
  return (size_t)(i / v->per_item) * (size_t)v->extent + (size_t)(i % v->per_item * v->stride);
}

/* Elements a buffer of `items` items of v spans. */
static size_t span(const view_t* v, long items) {
  return (size_t)(items - 1) * (size_t)v->extent + (size_t)((v->per_item - 1) * v->stride) + 1;
}

static void put(void* buf, MPI_Datatype base, size_t i, long value) {
  if (base == MPI_INT)
    ((int*)buf)[i] = (int)value;
  else if (base == MPI_FLOAT)
    ((float*)buf)[i] = (float)value;
  else
    ((double*)buf)[i] = (double)value;
}

static long get(const void* buf, MPI_Datatype base, size_t i) {
  if (base == MPI_INT) return ((const int*)buf)[i];
  if (base == MPI_FLOAT) return (long)((const float*)buf)[i];
  return (long)((const double*)buf)[i];
}

static void fill(void* buf, MPI_Datatype base, size_t elements) {
  for (size_t i = 0; i < elements; ++i) put(buf, base, i, kSentinel);
}

/* Whether every gap of the first `elements` positions still holds the sentinel. */
static int gaps_intact(const void* buf, MPI_Datatype base, const view_t* v, long items) {
  if (v->stride == 1 && v->extent == v->per_item) return 1;
  size_t n = span(v, items);
  char* used = (char*)calloc(n, 1);
  for (long i = 0; i < items * v->per_item; ++i) used[at(v, i)] = 1;
  int ok = 1;
  for (size_t i = 0; i < n; ++i) ok &= used[i] || get(buf, base, i) == kSentinel;
  free(used);
  return ok;
}

static void report(const char* what, int bad) {
  int any = 0;
  ++g_calls_allreduce;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  ++g_checks;
  g_failures += any != 0;
  if (g_rank == 0) printf("%s: %s\n", what, any ? "WRONG" : "ok");
}

static const char* base_name(MPI_Datatype base) {
  return base == MPI_INT ? "int" : base == MPI_FLOAT ? "float" : "double";
}

static void check_bcast(void* buf, int n, int t) {
  for (int root = 0; root<g_size; root += g_size> 1 ? g_size - 1 : 1) {
    view_t v = make_view((g_rank + t) % kLayouts, MPI_INT, n);
    fill(buf, MPI_INT, span(&v, v.count));
    if (g_rank == root)
      for (long i = 0; i < n; ++i) put(buf, MPI_INT, at(&v, i), i % 1000 + 7 * root + t);
    ++g_calls_bcast;
    MPI_Bcast(buf, v.count, v.type, root, MPI_COMM_WORLD);
    int bad = !gaps_intact(buf, MPI_INT, &v, v.count);
    for (long i = 0; i < n; ++i) bad |= get(buf, MPI_INT, at(&v, i)) != i % 1000 + 7 * root + t;
    char what[128];
    snprintf(what, sizeof what, "bcast %d int, root %d as %s, rank 1 as %s", n, root,
             layout_names[(root + t) % kLayouts], layout_names[(1 + t) % kLayouts]);
    report(what, bad);
    free_view(&v);
  }
}

/* k doubles per rank, sent and received as k MPI_DOUBLE, one contiguous(k) or one
 * vector(k, 1, 2), the send and receive layouts differing per rank. */
static void check_allgather(void* send, void* recv, int k, int t, int in_place) {
  /* plain, whole or strided: 0, 2, 3 */
  const int sl = (g_rank + t + 1) % 3, rl = (g_rank + t) % 3;
  view_t sv = make_view(sl == 2 ? 3 : sl * 2, MPI_DOUBLE, k);
  view_t rv = make_view(rl == 2 ? 3 : rl * 2, MPI_DOUBLE, k);
  const long all = (long)k * g_size;
  fill(recv, MPI_DOUBLE, span(&rv, (long)rv.count * g_size));
  for (long j = 0; j < k; ++j) {
    long value = g_rank * 100000L + j % 50000 + t;
    if (in_place)
      put(recv, MPI_DOUBLE, at(&rv, (long)g_rank * k + j), value);
    else
      put(send, MPI_DOUBLE, at(&sv, j), value);
  }
  ++g_calls_allgather;
  if (in_place)
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, rv.count, rv.type, MPI_COMM_WORLD);
  else
    MPI_Allgather(send, sv.count, sv.type, recv, rv.count, rv.type, MPI_COMM_WORLD);
  int bad = !gaps_intact(recv, MPI_DOUBLE, &rv, (long)rv.count * g_size);
  for (long i = 0; i < all; ++i)
    bad |= get(recv, MPI_DOUBLE, at(&rv, i)) != i / k * 100000L + i % k % 50000 + t;
  char what[128];
  snprintf(what, sizeof what, "allgather %d double%s, layouts mixed (t %d)", k,
           in_place ? " in place" : "", t);
  report(what, bad);
  free_view(&sv);
  free_view(&rv);
}

static int reduction_layout(int t) {
  return g_plain_reductions ? 0 : (g_rank + t) % kLayouts;
}

static long input(long i, int rank) {
  return i % 101 + 3L * rank;
}
static long sum(long i) {
  return g_size * (i % 101) + 3L * g_size * (g_size - 1) / 2;
}

static void check_allreduce(void* send, void* recv, MPI_Datatype base, int n, int t, int in_place) {
  view_t v = make_view(reduction_layout(t), base, n);
  fill(recv, base, span(&v, v.count));
  fill(send, base, span(&v, v.count));
  for (long i = 0; i < n; ++i) put(in_place ? recv : send, base, at(&v, i), input(i, g_rank));
  ++g_calls_allreduce;
  MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, v.count, v.type, MPI_SUM, MPI_COMM_WORLD);
  int bad = !gaps_intact(recv, base, &v, v.count);
  for (long i = 0; i < n; ++i) bad |= get(recv, base, at(&v, i)) != sum(i);
  char what[128];
  snprintf(what, sizeof what, "allreduce %d %s%s, layouts mixed (t %d)", n, base_name(base),
           in_place ? " in place" : "", t);
  report(what, bad);
  free_view(&v);
}

/* recvbuf is significant on the root only: the others pass NULL. */
static void check_reduce(void* send, void* recv, MPI_Datatype base, int n, int t, int in_place) {
  const int root = t % g_size, me_root = g_rank == root;
  view_t v = make_view(reduction_layout(t), base, n);
  fill(recv, base, span(&v, v.count));
  fill(send, base, span(&v, v.count));
  void* in = in_place && me_root ? recv : send;
  for (long i = 0; i < n; ++i) put(in, base, at(&v, i), input(i, g_rank));
  ++g_calls_reduce;
  MPI_Reduce(in_place && me_root ? MPI_IN_PLACE : send, me_root ? recv : NULL, v.count, v.type,
             MPI_SUM, root, MPI_COMM_WORLD);
  int bad = 0;
  if (me_root) {
    bad |= !gaps_intact(recv, base, &v, v.count);
    for (long i = 0; i < n; ++i) bad |= get(recv, base, at(&v, i)) != sum(i);
  }
  char what[128];
  snprintf(what, sizeof what, "reduce %d %s to %d%s, layouts mixed (t %d)", n, base_name(base),
           root, in_place ? " in place" : "", t);
  report(what, bad);
  free_view(&v);
}

/* n elements per rank's block; the input is size blocks of the same layout. */
static void check_reduce_scatter(void* send, void* recv, int n, int t, int in_place) {
  view_t v = make_view(reduction_layout(t), MPI_INT, n);
  const long items = (long)v.count * g_size, all = (long)n * g_size;
  fill(recv, MPI_INT, span(&v, in_place ? items : v.count));
  fill(send, MPI_INT, span(&v, items));
  for (long i = 0; i < all; ++i) put(in_place ? recv : send, MPI_INT, at(&v, i), input(i, g_rank));
  ++g_calls_rsb;
  MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : send, recv, v.count, v.type, MPI_SUM,
                           MPI_COMM_WORLD);
  int bad = !gaps_intact(recv, MPI_INT, &v, v.count);
  for (long i = 0; i < n; ++i) bad |= get(recv, MPI_INT, at(&v, i)) != sum((long)g_rank * n + i);
  char what[128];
  snprintf(what, sizeof what, "reduce_scatter_block %d int%s, layouts mixed (t %d)", n,
           in_place ? " in place" : "", t);
  report(what, bad);
  free_view(&v);
}

/* Other constructors of the same signature, 2n MPI_INT: n MPI_2INT (a pair type),
 * a struct of an int block and a contiguous(n) block, an indexed type with a gap,
 * a dup of a strided vector, a 2 x n subarray of a 2 x (n + 2) array, and 2n of
 * MPI_INT resized to 8 bytes; the root cycles through them. Then n (float, int)
 * pairs as MPI_FLOAT_INT on the root and as an equivalent struct elsewhere: no run
 * of one type, so MPI must take it on every rank. */
enum { kKinds = 6 };
static const char* kind_names[kKinds] = {"2int",       "struct",   "indexed",
                                         "dup vector", "subarray", "resized"};

/* Where element i of 2n lies in kind k's layout. */
static long kind_at(int k, long i, int n) {
  switch (k) {
    case 2:
      return i >= n ? i + 3 : i;
    case 3:
    case 5:
      return 2 * i;
    case 4:
      return i / n * (n + 2) + 1 + i % n;
    default:
      return i;
  }
}

static void check_signatures(int* buf, int n) {
  MPI_Datatype contig, strided, kinds[kKinds];
  MPI_Type_contiguous(n, MPI_INT, &contig);
  int lengths[2] = {n, 1};
  MPI_Aint displs[2] = {0, (MPI_Aint)n * (MPI_Aint)sizeof(int)};
  MPI_Datatype members[2] = {MPI_INT, contig};
  kinds[0] = MPI_2INT;
  MPI_Type_create_struct(2, lengths, displs, members, &kinds[1]);
  int block_lengths[2] = {n, n}, block_displs[2] = {0, n + 3};
  MPI_Type_indexed(2, block_lengths, block_displs, MPI_INT, &kinds[2]);
  MPI_Type_vector(2 * n, 1, 2, MPI_INT, &strided);
  MPI_Type_dup(strided, &kinds[3]);
  int sizes[2] = {2, n + 2}, subsizes[2] = {2, n}, starts[2] = {0, 1};
  MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &kinds[4]);
  MPI_Type_create_resized(MPI_INT, 0, 2 * (MPI_Aint)sizeof(int), &kinds[5]);
  const int counts[kKinds] = {n, 1, 1, 1, 1, 2 * n};
  for (int k = 1; k < kKinds; ++k) MPI_Type_commit(&kinds[k]);
  const long span_ints = 4L * n + 8;
  char* used = (char*)malloc((size_t)span_ints);
  for (int t = 0; t < kKinds; ++t) {
    const int root = t % g_size, mine = (g_rank + t) % kKinds;
    memset(used, 0, (size_t)span_ints);
    for (long i = 0; i < span_ints; ++i) buf[i] = kSentinel;
    for (long i = 0; i < 2L * n; ++i) {
      used[kind_at(mine, i, n)] = 1;
      if (g_rank == root) buf[kind_at(mine, i, n)] = (int)(i * 3 + t);
    }
    ++g_calls_bcast;
    MPI_Bcast(buf, counts[mine], kinds[mine], root, MPI_COMM_WORLD);
    int bad = 0;
    for (long i = 0; i < 2L * n; ++i) bad |= buf[kind_at(mine, i, n)] != i * 3 + t;
    for (long i = 0; i < span_ints; ++i) bad |= !used[i] && buf[i] != kSentinel;
    char what[128];
    snprintf(what, sizeof what, "bcast %d int, root %d as %s, rank 1 as %s", 2 * n, root,
             kind_names[(root + t) % kKinds], kind_names[(1 + t) % kKinds]);
    report(what, bad);
  }
  free(used);
  for (int k = 1; k < kKinds; ++k) MPI_Type_free(&kinds[k]);
  MPI_Type_free(&contig);
  MPI_Type_free(&strided);

  /* (float, int) pairs: MPI_FLOAT_INT or a struct of the same signature. */
  struct pair {
    float f;
    int i;
  }* pairs = (struct pair*)buf;
  MPI_Datatype pair_struct;
  int one[2] = {1, 1};
  MPI_Aint pair_displs[2] = {0, (MPI_Aint)sizeof(float)};
  MPI_Datatype pair_members[2] = {MPI_FLOAT, MPI_INT};
  MPI_Type_create_struct(2, one, pair_displs, pair_members, &pair_struct);
  MPI_Type_commit(&pair_struct);
  for (int i = 0; i < n; ++i)
    pairs[i].f = g_rank == 0 ? (float)i : -1.0f, pairs[i].i = g_rank ? 0 : -i;
  ++g_calls_bcast;
  ++g_bcast_not_run;
  MPI_Bcast(pairs, n, g_rank == 0 ? MPI_FLOAT_INT : pair_struct, 0, MPI_COMM_WORLD);
  int bad = 0;
  for (int i = 0; i < n; ++i) bad |= pairs[i].f != (float)i || pairs[i].i != -i;
  char what[128];
  snprintf(what, sizeof what, "bcast %d float_int pairs, root as MPI_FLOAT_INT, others as struct",
           n);
  report(what, bad);
  MPI_Type_free(&pair_struct);
}

int main(int argc, char** argv) {
  signal(SIGALRM, on_alarm);
  alarm(kTimeLimitS);
  MPI_Init(&argc, &argv);
  g_plain_reductions = argc > 1 && strcmp(argv[1], "--plain-reductions") == 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  /* Elements of 4 bytes: 64 B and 4 KiB (under, then at, most default thresholds),
   * 1 MiB (Reduce's) and 4 MiB. */
  const int sizes[] = {16, 1024, 1 << 18, 1 << 20};
  const size_t max_elements = (size_t)2 * (1 << 20) * (size_t)g_size;
  void* a = malloc(max_elements * sizeof(double));
  void* b = malloc(max_elements * sizeof(double));
  for (int s = 0; s < (int)(sizeof sizes / sizeof sizes[0]); ++s) {
    const int n = sizes[s];
    for (int t = 0; t < kLayouts; ++t) {
      const int in_place = t % 2;
      check_bcast(a, n, t);
      check_allgather(a, b, n / 2, t, in_place);
      check_allreduce(a, b, MPI_INT, n, t, in_place);
      check_allreduce(a, b, MPI_FLOAT, n, t, !in_place);
      check_reduce(a, b, MPI_INT, n, t, in_place);
      check_reduce(a, b, MPI_FLOAT, n, t, !in_place);
      check_reduce_scatter(a, b, n / 4, t, in_place);
    }
  }
  check_signatures((int*)a, 1024);
  free(a);
  free(b);
  if (g_rank == 0) {
    printf(
        "calls allreduce=%ld bcast=%ld reduce=%ld allgather=%ld reduce_scatter_block=%ld "
        "bcast_not_run=%ld\n",
        g_calls_allreduce, g_calls_bcast, g_calls_reduce, g_calls_allgather, g_calls_rsb,
        g_bcast_not_run);
    printf("%d checks, %d wrong\n", g_checks, g_failures);
  }
  MPI_Finalize();
  return g_failures ? 1 : 0;
}
