// Pacing of the streams that share a link by the plan's channel rate shares.
//
// The simulator's prediction for tree plans assumes that streams of several channels
// crossing one link divide it in proportion to their channels' shares
// (plan::Plan::channel_shares, transport.hpp), not equally. The sender controls the
// division by the order in which it hands bytes to the link: each lane (a stream:
// peer and channel) that has bytes ready asks here first, and pieces are granted in
// order of weighted fair queueing among the lanes of one link (a lane's virtual
// finish advances by bytes / share per piece; the lane furthest behind goes next).
// A lane is busy while it has more to hand over and bytes on the link (a lane whose
// slots are all in flight still holds lighter lanes back, so the link is divided by
// share, not by slot count). Over any stretch in which lanes stay busy, the bytes
// they are granted are in proportion to their shares within one piece each. A lane
// with nothing to hand over, or with nothing on the link (waiting for its receiver),
// holds nobody back: a held lane only ever waits for bytes already handed to the
// link, which leave without the receiver's help, so pacing never deadlocks the plan.
// A lane takes up where the busy lanes are when it comes back, not with a burst.
// One thread (the executor's) drives it.
//
// Who uses it: the device transport (cuda/device_transport.hpp; a link per peer,
// pieces are the copies it queues on the copy engines) and the paced decorator of
// the streams between nodes (paced_transport.hpp; a link per peer node, pieces are
// messages below the transport's eager limit).
#pragma once

#include <cstddef>
#include <map>
#include <tuple>
#include <vector>

#include "transport/transport.hpp"

namespace blink::transport {

class ChannelPacer {
 public:
  // By channel number; missing or non-positive shares count as 1. Kept until the
  // next call (the plan that runs next may share its channels differently). Copied
  // into the storage of the last call: no allocation per run once it fits.
  void setShares(const std::vector<double>& shares);
  // Whether the lane may hand a piece of `bytes` to `link` now; a yes charges it. A
  // lane told no is waiting: it must ask again (the executor polls it) or say idle().
  bool mayIssue(int link, StreamKey lane, std::size_t bytes);
  // The lane is not busy (see the top).
  void idle(int link, StreamKey lane);
  // Bytes granted to the lane so far (for tests and logs).
  std::size_t granted(int link, StreamKey lane) const;

  // The device transport's lanes: one link per peer.
  bool mayIssue(int peer, int channel, std::size_t bytes) {
    return mayIssue(peer, StreamKey{peer, channel}, bytes);
  }
  void idle(int peer, int channel) { idle(peer, StreamKey{peer, channel}); }
  std::size_t granted(int peer, int channel) const {
    return granted(peer, StreamKey{peer, channel});
  }

 private:
  struct Lane {
    double finish = 0.0;  // bytes / share granted so far, in virtual time
    bool waiting = false;
    std::size_t granted = 0;
  };
  using LaneId = std::tuple<int, int, int>;  // link, peer, channel
  double share(int channel) const;

  std::vector<double> shares_;
  std::map<LaneId, Lane> lanes_;  // the lanes of one link are adjacent
};

}  // namespace blink::transport
