#include "comm_cache.hpp"

#include <mutex>
#include <set>

#include "common/error.hpp"
#include "common/log.hpp"

namespace blink::glue {
namespace {

struct Entry {
  std::unique_ptr<runtime::Communicator> comm;  // null: Blink is unavailable here
  std::string unavailable;                      // why, when comm is null
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

runtime::Communicator* communicatorFor(MPI_Comm comm) {
  const int key = keyval();
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, key, &value, &found) != MPI_SUCCESS) return nullptr;
  if (found) return static_cast<Entry*>(value)->comm.get();
  auto entry = std::make_unique<Entry>();
  try {
    entry->comm = std::make_unique<runtime::Communicator>(comm);
  } catch (const Error& e) {
    // Communicator creation agrees across ranks: every rank lands here together.
    entry->unavailable = e.what();
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    if (rank == 0) {
      log::write(log::Level::Warn, std::string("Blink is unavailable on this communicator, "
                                               "which stays on the MPI library: ") +
                                       e.what());
    }
  }
  Entry* raw = entry.release();
  {
    std::lock_guard lock(entries_mutex);
    liveEntries().insert(raw);
  }
  PMPI_Comm_set_attr(comm, key, raw);
  return raw->comm.get();
}

void releaseAll() {
  std::lock_guard lock(entries_mutex);
  for (Entry* e : liveEntries()) e->comm.reset();
}

}  // namespace blink::glue
