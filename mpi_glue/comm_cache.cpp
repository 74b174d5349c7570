#include "comm_cache.hpp"

#include <memory>
#include <mutex>
#include <optional>
#include <set>

namespace blink::glue {
namespace {

struct Entry {
  std::optional<BlinkComm> comm;  // empty: Blink is unavailable here
  std::string unavailable;        // why, when comm is empty
  ~Entry() {
    if (comm) blinkCommDestroy(comm->handle());
  }
};

std::mutex entries_mutex;
std::set<Entry*>& liveEntries() {
  static auto* entries = new std::set<Entry*>();  // never destroyed: used at exit
  return *entries;
}

int deleteEntry(MPI_Comm, int, void* value, void*) {
  auto* entry = static_cast<Entry*>(value);
  {
    std::lock_guard lock(entries_mutex);
    liveEntries().erase(entry);
  }
  delete entry;
  return MPI_SUCCESS;
}

int keyval() {
  static int key = [] {
    int k = MPI_KEYVAL_INVALID;
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, deleteEntry, &k, nullptr) != MPI_SUCCESS) {
      throw Error(blinkSystemError, "MPI_Comm_create_keyval failed");
    }
    return k;
  }();
  return key;
}

}  // namespace

BlinkComm* communicatorFor(MPI_Comm comm) {
  const int key = keyval();
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, key, &value, &found) != MPI_SUCCESS) return nullptr;
  if (found) {
    auto* entry = static_cast<Entry*>(value);
    return entry->comm ? &*entry->comm : nullptr;
  }
  auto entry = std::make_unique<Entry>();
  blinkComm_t made = nullptr;
  if (blinkCommInitFromMPI(&made, comm) == blinkSuccess) {
    entry->comm.emplace(made);
  } else {
    // Communicator creation agrees across ranks: every rank lands here together.
    entry->unavailable = blinkGetLastError();
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    if (rank == 0) {
      log::write(log::Level::Warn,
                 "Blink is unavailable on this communicator, which stays on "
                 "the MPI library: " +
                     entry->unavailable);
    }
  }
  Entry* raw = entry.release();
  {
    std::lock_guard lock(entries_mutex);
    liveEntries().insert(raw);
  }
  PMPI_Comm_set_attr(comm, key, raw);
  return raw->comm ? &*raw->comm : nullptr;
}

void releaseAll() {
  std::lock_guard lock(entries_mutex);
  for (Entry* e : liveEntries()) {
    if (e->comm) blinkCommDestroy(e->comm->handle());
    e->comm.reset();
  }
}

}  // namespace blink::glue
