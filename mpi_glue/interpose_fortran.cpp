// The Fortran entry points of libblink_mpi.so: its collectives, MPI_Init,
// MPI_Init_thread and MPI_Finalize. Open MPI's Fortran bindings (libmpi_mpifh.so
// for mpif.h and `use mpi`, libmpi_usempif08.so for `use mpi_f08`) call PMPI_*
// directly, so the C interposition never sees a Fortran program's calls. These
// definitions take the names the program itself calls; under LD_PRELOAD (or linked
// before the MPI libraries) they come first in the dynamic linker's search, convert
// the arguments as Open MPI's own bindings do, and call the C MPI_* function:
// Blink's interposer where it defines one, else the MPI library. Either way the C
// path decides, counts and falls back to PMPI_*.
//
// Conventions (Open MPI 4.1, gfortran): every argument by reference, buffers as
// plain addresses (no array descriptors: the bindings declare them "ignore TKR" and
// assumed size), handles as one MPI_Fint (mpif.h, `use mpi`) or a one-MPI_Fint
// derived type (`use mpi_f08`, same layout), arrays of counts as MPI_Fint arrays,
// and ierror last, which `use mpi_f08` may leave out (a null address).
#include <mpi.h>

#include <type_traits>
#include <vector>

// Fortran's MPI_IN_PLACE and MPI_BOTTOM are common blocks; a buffer argument is
// the sentinel when it is the block's address. Which spelling of the block's name
// exists depends on the Fortran compiler Open MPI was built with, so all four are
// weak references (null where absent), resolved like the program's own references.
#define BLINK_FORTRAN_SENTINEL(lower, UPPER)                             \
  extern "C" __attribute__((weak, visibility("default"))) int lower;     \
  extern "C" __attribute__((weak, visibility("default"))) int lower##_;  \
  extern "C" __attribute__((weak, visibility("default"))) int lower##__; \
  extern "C" __attribute__((weak, visibility("default"))) int UPPER;
BLINK_FORTRAN_SENTINEL(mpi_fortran_in_place, MPI_FORTRAN_IN_PLACE)
BLINK_FORTRAN_SENTINEL(mpi_fortran_bottom, MPI_FORTRAN_BOTTOM)
#undef BLINK_FORTRAN_SENTINEL

namespace blink::glue {
namespace {

bool isInPlace(const void* p) {
  return p != nullptr && (p == &mpi_fortran_in_place || p == &mpi_fortran_in_place_ ||
                          p == &mpi_fortran_in_place__ || p == &MPI_FORTRAN_IN_PLACE);
}

bool isBottom(const void* p) {
  return p != nullptr && (p == &mpi_fortran_bottom || p == &mpi_fortran_bottom_ ||
                          p == &mpi_fortran_bottom__ || p == &MPI_FORTRAN_BOTTOM);
}

// A buffer that may be MPI_BOTTOM (absolute addresses in the datatype).
void* buffer(void* p) {
  return isBottom(p) ? MPI_BOTTOM : p;
}

// A send buffer, which may also be MPI_IN_PLACE.
const void* sendBuffer(void* p) {
  return isInPlace(p) ? MPI_IN_PLACE : buffer(p);
}

void setError(MPI_Fint* ierror, int rc) {
  if (ierror != nullptr) *ierror = static_cast<MPI_Fint>(rc);
}

MPI_Comm comm(const MPI_Fint* f) {
  return PMPI_Comm_f2c(*f);
}
MPI_Datatype type(const MPI_Fint* f) {
  return PMPI_Type_f2c(*f);
}
MPI_Op op(const MPI_Fint* f) {
  return PMPI_Op_f2c(*f);
}
int integer(const MPI_Fint* f) {
  return static_cast<int>(*f);
}

// A Fortran array of one int per rank of `c` (counts, displacements) as C ints:
// the caller's own array when INTEGER is C's int, as in every default build.
class IntArray {
 public:
  IntArray(const MPI_Fint* f, MPI_Comm c) {
    if constexpr (std::is_same_v<MPI_Fint, int>) {
      data_ = f;
    } else {
      int size = 0;
      PMPI_Comm_size(c, &size);
      copy_.assign(f, f + size);
      data_ = copy_.data();
    }
  }
  const int* get() const { return data_; }

 private:
  const int* data_ = nullptr;
  std::vector<int> copy_;
};

void allreduce(void* sendbuf, void* recvbuf, const MPI_Fint* count, const MPI_Fint* datatype,
               const MPI_Fint* o, const MPI_Fint* c, MPI_Fint* ierror) {
  setError(ierror, MPI_Allreduce(sendBuffer(sendbuf), buffer(recvbuf), integer(count),
                                 type(datatype), op(o), comm(c)));
}

void reduce(void* sendbuf, void* recvbuf, const MPI_Fint* count, const MPI_Fint* datatype,
            const MPI_Fint* o, const MPI_Fint* root, const MPI_Fint* c, MPI_Fint* ierror) {
  setError(ierror, MPI_Reduce(sendBuffer(sendbuf), buffer(recvbuf), integer(count), type(datatype),
                              op(o), integer(root), comm(c)));
}

void reduce_scatter_block(void* sendbuf, void* recvbuf, const MPI_Fint* recvcount,
                          const MPI_Fint* datatype, const MPI_Fint* o, const MPI_Fint* c,
                          MPI_Fint* ierror) {
  setError(ierror, MPI_Reduce_scatter_block(sendBuffer(sendbuf), buffer(recvbuf),
                                            integer(recvcount), type(datatype), op(o), comm(c)));
}

void reduce_scatter(void* sendbuf, void* recvbuf, const MPI_Fint* recvcounts,
                    const MPI_Fint* datatype, const MPI_Fint* o, const MPI_Fint* c,
                    MPI_Fint* ierror) {
  const MPI_Comm cc = comm(c);
  const IntArray counts(recvcounts, cc);
  setError(ierror, MPI_Reduce_scatter(sendBuffer(sendbuf), buffer(recvbuf), counts.get(),
                                      type(datatype), op(o), cc));
}

void bcast(void* buf, const MPI_Fint* count, const MPI_Fint* datatype, const MPI_Fint* root,
           const MPI_Fint* c, MPI_Fint* ierror) {
  setError(ierror, MPI_Bcast(buffer(buf), integer(count), type(datatype), integer(root), comm(c)));
}

void allgather(void* sendbuf, const MPI_Fint* sendcount, const MPI_Fint* sendtype, void* recvbuf,
               const MPI_Fint* recvcount, const MPI_Fint* recvtype, const MPI_Fint* c,
               MPI_Fint* ierror) {
  setError(ierror, MPI_Allgather(sendBuffer(sendbuf), integer(sendcount), type(sendtype),
                                 buffer(recvbuf), integer(recvcount), type(recvtype), comm(c)));
}

void allgatherv(void* sendbuf, const MPI_Fint* sendcount, const MPI_Fint* sendtype, void* recvbuf,
                const MPI_Fint* recvcounts, const MPI_Fint* displs, const MPI_Fint* recvtype,
                const MPI_Fint* c, MPI_Fint* ierror) {
  const MPI_Comm cc = comm(c);
  const IntArray counts(recvcounts, cc), offsets(displs, cc);
  setError(ierror,
           MPI_Allgatherv(sendBuffer(sendbuf), integer(sendcount), type(sendtype), buffer(recvbuf),
                          counts.get(), offsets.get(), type(recvtype), cc));
}

void gather(void* sendbuf, const MPI_Fint* sendcount, const MPI_Fint* sendtype, void* recvbuf,
            const MPI_Fint* recvcount, const MPI_Fint* recvtype, const MPI_Fint* root,
            const MPI_Fint* c, MPI_Fint* ierror) {
  setError(ierror,
           MPI_Gather(sendBuffer(sendbuf), integer(sendcount), type(sendtype), buffer(recvbuf),
                      integer(recvcount), type(recvtype), integer(root), comm(c)));
}

void gatherv(void* sendbuf, const MPI_Fint* sendcount, const MPI_Fint* sendtype, void* recvbuf,
             const MPI_Fint* recvcounts, const MPI_Fint* displs, const MPI_Fint* recvtype,
             const MPI_Fint* root, const MPI_Fint* c, MPI_Fint* ierror) {
  const MPI_Comm cc = comm(c);
  // Significant at the root only, but Open MPI's binding converts them on every
  // rank too: a Fortran caller passes some array either way.
  const IntArray counts(recvcounts, cc), offsets(displs, cc);
  setError(ierror,
           MPI_Gatherv(sendBuffer(sendbuf), integer(sendcount), type(sendtype), buffer(recvbuf),
                       counts.get(), offsets.get(), type(recvtype), integer(root), cc));
}

void barrier(const MPI_Fint* c, MPI_Fint* ierror) {
  setError(ierror, MPI_Barrier(comm(c)));
}

// Blink sets up, agrees its settings across ranks and reports its accounting in
// the C MPI_Init* and MPI_Finalize, which Fortran's own bindings would bypass too.
// Fortran has no argc/argv to give, as in Open MPI's binding.
void init(MPI_Fint* ierror) {
  int argc = 0;
  char** argv = nullptr;
  setError(ierror, MPI_Init(&argc, &argv));
}

void init_thread(const MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierror) {
  int argc = 0;
  char** argv = nullptr;
  int got = MPI_THREAD_SINGLE;
  const int rc = MPI_Init_thread(&argc, &argv, integer(required), &got);
  *provided = static_cast<MPI_Fint>(got);
  setError(ierror, rc);
}

void finalize(MPI_Fint* ierror) {
  setError(ierror, MPI_Finalize());
}

}  // namespace
}  // namespace blink::glue

// Each collective under every name a Fortran program may call it by: gfortran's
// mpi_x_ (mpif.h and `use mpi`), the other compilers' mpi_x, mpi_x__ and MPI_X (Open
// MPI's libmpi_mpifh.so exports all four), and mpi_x_f08_, the specific procedure
// of `use mpi_f08`'s generic interface, which libmpi_usempif08.so defines.
#define BLINK_FORTRAN_ENTRY(lower, UPPER, params, args)                              \
  extern "C" __attribute__((visibility("default"))) void mpi_##lower params {        \
    blink::glue::lower args;                                                         \
  }                                                                                  \
  extern "C" __attribute__((visibility("default"))) void mpi_##lower##_ params {     \
    blink::glue::lower args;                                                         \
  }                                                                                  \
  extern "C" __attribute__((visibility("default"))) void mpi_##lower##__ params {    \
    blink::glue::lower args;                                                         \
  }                                                                                  \
  extern "C" __attribute__((visibility("default"))) void MPI_##UPPER params {        \
    blink::glue::lower args;                                                         \
  }                                                                                  \
  extern "C" __attribute__((visibility("default"))) void mpi_##lower##_f08_ params { \
    blink::glue::lower args;                                                         \
  }

BLINK_FORTRAN_ENTRY(allreduce, ALLREDUCE,
                    (void* sendbuf, void* recvbuf, const MPI_Fint* count, const MPI_Fint* datatype,
                     const MPI_Fint* op, const MPI_Fint* comm, MPI_Fint* ierror),
                    (sendbuf, recvbuf, count, datatype, op, comm, ierror))
BLINK_FORTRAN_ENTRY(reduce, REDUCE,
                    (void* sendbuf, void* recvbuf, const MPI_Fint* count, const MPI_Fint* datatype,
                     const MPI_Fint* op, const MPI_Fint* root, const MPI_Fint* comm,
                     MPI_Fint* ierror),
                    (sendbuf, recvbuf, count, datatype, op, root, comm, ierror))
BLINK_FORTRAN_ENTRY(reduce_scatter_block, REDUCE_SCATTER_BLOCK,
                    (void* sendbuf, void* recvbuf, const MPI_Fint* recvcount,
                     const MPI_Fint* datatype, const MPI_Fint* op, const MPI_Fint* comm,
                     MPI_Fint* ierror),
                    (sendbuf, recvbuf, recvcount, datatype, op, comm, ierror))
BLINK_FORTRAN_ENTRY(reduce_scatter, REDUCE_SCATTER,
                    (void* sendbuf, void* recvbuf, const MPI_Fint* recvcounts,
                     const MPI_Fint* datatype, const MPI_Fint* op, const MPI_Fint* comm,
                     MPI_Fint* ierror),
                    (sendbuf, recvbuf, recvcounts, datatype, op, comm, ierror))
BLINK_FORTRAN_ENTRY(bcast, BCAST,
                    (void* buffer, const MPI_Fint* count, const MPI_Fint* datatype,
                     const MPI_Fint* root, const MPI_Fint* comm, MPI_Fint* ierror),
                    (buffer, count, datatype, root, comm, ierror))
BLINK_FORTRAN_ENTRY(allgather, ALLGATHER,
                    (void* sendbuf, const MPI_Fint* sendcount, const MPI_Fint* sendtype,
                     void* recvbuf, const MPI_Fint* recvcount, const MPI_Fint* recvtype,
                     const MPI_Fint* comm, MPI_Fint* ierror),
                    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierror))
BLINK_FORTRAN_ENTRY(allgatherv, ALLGATHERV,
                    (void* sendbuf, const MPI_Fint* sendcount, const MPI_Fint* sendtype,
                     void* recvbuf, const MPI_Fint* recvcounts, const MPI_Fint* displs,
                     const MPI_Fint* recvtype, const MPI_Fint* comm, MPI_Fint* ierror),
                    (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                     ierror))
BLINK_FORTRAN_ENTRY(gather, GATHER,
                    (void* sendbuf, const MPI_Fint* sendcount, const MPI_Fint* sendtype,
                     void* recvbuf, const MPI_Fint* recvcount, const MPI_Fint* recvtype,
                     const MPI_Fint* root, const MPI_Fint* comm, MPI_Fint* ierror),
                    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                     ierror))
BLINK_FORTRAN_ENTRY(gatherv, GATHERV,
                    (void* sendbuf, const MPI_Fint* sendcount, const MPI_Fint* sendtype,
                     void* recvbuf, const MPI_Fint* recvcounts, const MPI_Fint* displs,
                     const MPI_Fint* recvtype, const MPI_Fint* root, const MPI_Fint* comm,
                     MPI_Fint* ierror),
                    (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                     comm, ierror))
BLINK_FORTRAN_ENTRY(barrier, BARRIER, (const MPI_Fint* comm, MPI_Fint* ierror), (comm, ierror))
BLINK_FORTRAN_ENTRY(init, INIT, (MPI_Fint * ierror), (ierror))
BLINK_FORTRAN_ENTRY(init_thread, INIT_THREAD,
                    (const MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierror),
                    (required, provided, ierror))
BLINK_FORTRAN_ENTRY(finalize, FINALIZE, (MPI_Fint * ierror), (ierror))

#undef BLINK_FORTRAN_ENTRY
