#include "type_signature.hpp"

#include <mutex>
#include <vector>

#include "eligibility.hpp"

namespace blink::glue {
namespace {

// A signature: a run of one predefined type (element null: the empty signature),
// or not a run at all.
struct Run {
  bool run = false;
  MPI_Datatype element = MPI_DATATYPE_NULL;
};

constexpr Run kNoRun{};
constexpr Run kEmpty{true, MPI_DATATYPE_NULL};
// Types nest a few levels in practice; a deeper one is not worth the recursion.
constexpr int kMaxDepth = 64;

bool isNamed(MPI_Datatype type) {
  int ints = 0, addrs = 0, types = 0, combiner = MPI_UNDEFINED;
  return PMPI_Type_get_envelope(type, &ints, &addrs, &types, &combiner) == MPI_SUCCESS &&
         combiner == MPI_COMBINER_NAMED;
}

// A predefined type's signature: itself, except the pair types of MINLOC/MAXLOC,
// whose signatures are those of the pairs they are defined as.
Run namedRun(MPI_Datatype type, MPI_Count size) {
  if (size == 0) return kEmpty;
  if (type == MPI_2INT) return {true, MPI_INT};
  if (type == MPI_2REAL) return {true, MPI_REAL};
  if (type == MPI_2DOUBLE_PRECISION) return {true, MPI_DOUBLE_PRECISION};
  if (type == MPI_2INTEGER) return {true, MPI_INTEGER};
  if (type == MPI_2COMPLEX) return {true, MPI_COMPLEX};
  if (type == MPI_2DOUBLE_COMPLEX) return {true, MPI_DOUBLE_COMPLEX};
  if (type == MPI_FLOAT_INT || type == MPI_DOUBLE_INT || type == MPI_LONG_INT ||
      type == MPI_SHORT_INT || type == MPI_LONG_DOUBLE_INT) {
    return kNoRun;
  }
  return {true, type};
}

// The handles PMPI_Type_get_contents returns; MPI requires freeing the derived ones.
class Contents {
 public:
  Contents(MPI_Datatype type, int ints, int addrs, int types)
      : ints_(static_cast<std::size_t>(ints)),
        addrs_(static_cast<std::size_t>(addrs)),
        types_(static_cast<std::size_t>(types), MPI_DATATYPE_NULL) {
    ok_ = PMPI_Type_get_contents(type, ints, addrs, types, ints_.data(), addrs_.data(),
                                 types_.data()) == MPI_SUCCESS;
  }
  Contents(const Contents&) = delete;
  Contents& operator=(const Contents&) = delete;
  ~Contents() {
    if (!ok_) return;
    for (MPI_Datatype& t : types_) {
      if (!isNamed(t)) PMPI_Type_free(&t);
    }
  }
  bool ok() const { return ok_; }
  const std::vector<int>& ints() const { return ints_; }
  const std::vector<MPI_Datatype>& types() const { return types_; }

 private:
  std::vector<int> ints_;
  std::vector<MPI_Aint> addrs_;
  std::vector<MPI_Datatype> types_;
  bool ok_ = false;
};

Run analyse(MPI_Datatype type, int depth);

// MPI_Type_create_struct: blocks of possibly different types, one run only if
// every non-empty block is a run of the same element.
Run structRun(const Contents& contents, int depth) {
  const auto& ints = contents.ints();
  const auto& types = contents.types();
  if (ints.empty() || ints.size() < static_cast<std::size_t>(ints[0]) + 1) return kNoRun;
  Run whole = kEmpty;
  for (std::size_t i = 0; i < types.size() && i < static_cast<std::size_t>(ints[0]); ++i) {
    if (ints[i + 1] == 0) continue;
    const Run part = analyse(types[i], depth + 1);
    if (!part.run) return kNoRun;
    if (part.element == MPI_DATATYPE_NULL) continue;
    if (whole.element != MPI_DATATYPE_NULL && whole.element != part.element) return kNoRun;
    whole.element = part.element;
  }
  return whole;
}

Run analyse(MPI_Datatype type, int depth) {
  if (depth > kMaxDepth) return kNoRun;
  int ints = 0, addrs = 0, types = 0, combiner = MPI_UNDEFINED;
  MPI_Count size = 0;
  if (PMPI_Type_get_envelope(type, &ints, &addrs, &types, &combiner) != MPI_SUCCESS ||
      PMPI_Type_size_x(type, &size) != MPI_SUCCESS || size < 0) {
    return kNoRun;
  }
  if (combiner == MPI_COMBINER_NAMED) return namedRun(type, size);
  // Parameterised Fortran types are predefined types of their own.
  if (combiner == MPI_COMBINER_F90_REAL || combiner == MPI_COMBINER_F90_COMPLEX ||
      combiner == MPI_COMBINER_F90_INTEGER) {
    return size == 0 ? kEmpty : Run{true, type};
  }
  if (size == 0) return kEmpty;
  Contents contents(type, ints, addrs, types);
  if (!contents.ok()) return kNoRun;
  if (combiner == MPI_COMBINER_STRUCT) return structRun(contents, depth);
  // Every other constructor (dup, contiguous, vector, indexed, subarray, darray,
  // resized...) repeats one old type: its signature is a run of whatever the old
  // type's is.
  if (contents.types().size() != 1) return kNoRun;
  return analyse(contents.types()[0], depth + 1);
}

TypeInfo describeByMpi(MPI_Datatype type) {
  TypeInfo info;
  MPI_Count size = 0;
  if (PMPI_Type_size_x(type, &size) != MPI_SUCCESS || size < 0) return info;
  const Run run = analyse(type, 0);
  info.run = run.run;
  info.element = run.element;
  MPI_Count element_size = 0;
  if (run.run && run.element != MPI_DATATYPE_NULL &&
      PMPI_Type_size_x(run.element, &element_size) == MPI_SUCCESS && element_size > 0) {
    info.reducible = reductionType(run.element);
    info.element_size = static_cast<std::uint64_t>(element_size);
  }
  info.size = static_cast<std::uint64_t>(size);
  MPI_Aint lb = 0, true_lb = 0, true_extent = 0;
  if (PMPI_Type_get_extent(type, &lb, &info.extent) != MPI_SUCCESS ||
      PMPI_Type_get_true_extent(type, &true_lb, &true_extent) != MPI_SUCCESS) {
    return TypeInfo{};
  }
  // No gaps, lower bound 0 and items back to back: count items are count * size bytes.
  const auto bytes = static_cast<MPI_Aint>(size);
  info.contiguous = lb == 0 && true_lb == 0 && info.extent == bytes && true_extent == bytes;
  return info;
}

int deleteInfo(MPI_Datatype, int, void* value, void*) {
  delete static_cast<TypeInfo*>(value);
  return MPI_SUCCESS;
}

// MPI_KEYVAL_INVALID when MPI could not make one: nothing is cached then.
int keyval() {
  static const int key = [] {
    int k = MPI_KEYVAL_INVALID;
    if (PMPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, deleteInfo, &k, nullptr) != MPI_SUCCESS) {
      k = MPI_KEYVAL_INVALID;
    }
    return k;
  }();
  return key;
}

std::optional<TypeInfo> cached(MPI_Datatype type, int key) {
  void* value = nullptr;
  int found = 0;
  if (PMPI_Type_get_attr(type, key, &value, &found) != MPI_SUCCESS || !found) return std::nullopt;
  return *static_cast<const TypeInfo*>(value);
}

// Serialises the first analyses of derived types, so that two threads never both
// set the attribute (the second would free the value the first is reading).
std::mutex analysis_mutex;

}  // namespace

TypeInfo describeOther(MPI_Datatype type) {
  if (type == MPI_DATATYPE_NULL) return TypeInfo{};
  const int key = keyval();
  if (key == MPI_KEYVAL_INVALID) return describeByMpi(type);
  if (auto info = cached(type, key)) return *info;
  if (isNamed(type)) return describeByMpi(type);
  std::lock_guard lock(analysis_mutex);
  if (auto info = cached(type, key)) return *info;
  const TypeInfo info = describeByMpi(type);
  auto* stored = new TypeInfo(info);
  if (PMPI_Type_set_attr(type, key, stored) != MPI_SUCCESS) delete stored;
  return info;
}

}  // namespace blink::glue
