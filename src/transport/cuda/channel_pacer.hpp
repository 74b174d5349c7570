// Pacing of the device transport's channels by the plan's rate shares.
//
// The simulator's prediction for tree plans assumes that streams of several channels
// crossing one link divide it in proportion to their channels' shares
// (plan::Plan::channel_shares, transport.hpp), not equally. On the device path the
// streams from one rank to one peer cross the same link (NVLink or PCIe, or the
// host for staged pairs), and the copy engines serve the copies queued on them
// about in queue order. So the sender controls the division by the order in which
// it queues chunks: each (peer, channel) lane that has a chunk ready asks here
// first, and chunks are granted in order of weighted fair queueing (a lane's
// virtual finish advances by bytes / share per chunk; the lane furthest behind
// goes next). A lane is busy while it has more to queue and copies on the link (a
// lane whose slots are all in flight still holds lighter lanes back, so the link
// is divided by share, not by slot count). Over any stretch in which lanes stay
// busy, the bytes they queue are in proportion to their shares within one chunk
// each. A lane with nothing to queue, or with no copy on the link (waiting for its
// receiver to free slots), holds nobody back: a held lane only ever waits for
// copies already queued on the device, which finish, so pacing never deadlocks
// the plan. A lane takes up where the busy lanes are when it comes back, not with
// a burst. One thread (the executor's) drives it.
//
// Queue order is what the sender decides; how the hardware then interleaves the
// queued copies of several streams is the GPU's (unverified on hardware).
#pragma once

#include <cstddef>
#include <map>
#include <utility>
#include <vector>

namespace blink::transport {

class ChannelPacer {
 public:
  // By channel number; missing or non-positive shares count as 1. Kept until the
  // next call (the plan that runs next may share its channels differently).
  void setShares(std::vector<double> shares);
  // Whether the lane (peer, channel) may queue a chunk of `bytes` now; a yes
  // charges it. A lane told no is waiting: it must ask again (the executor polls it)
  // or say idle().
  bool mayIssue(int peer, int channel, std::size_t bytes);
  // The lane is not busy (see the top).
  void idle(int peer, int channel);
  // Bytes granted to the lane so far (for tests and logs).
  std::size_t granted(int peer, int channel) const;

 private:
  struct Lane {
    double finish = 0.0;  // bytes / share queued so far, in virtual time
    bool waiting = false;
    std::size_t granted = 0;
  };
  double share(int channel) const;

  std::vector<double> shares_;
  std::map<std::pair<int, int>, Lane> lanes_;  // by (peer, channel)
};

}  // namespace blink::transport
