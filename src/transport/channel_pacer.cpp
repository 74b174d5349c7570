#include "transport/channel_pacer.hpp"

#include <algorithm>
#include <limits>

namespace blink::transport {

void ChannelPacer::setShares(const std::vector<double>& shares) {
  shares_ = shares;
}

double ChannelPacer::share(int channel) const {
  if (channel < 0 || static_cast<std::size_t>(channel) >= shares_.size()) return 1.0;
  const double s = shares_[static_cast<std::size_t>(channel)];
  return s > 0.0 ? s : 1.0;
}

bool ChannelPacer::mayIssue(int link, StreamKey lane, std::size_t bytes) {
  Lane& me = lanes_[{link, lane.peer, lane.channel}];
  constexpr int kLowest = std::numeric_limits<int>::min();
  constexpr int kHighest = std::numeric_limits<int>::max();
  const auto first = lanes_.lower_bound({link, kLowest, kLowest});
  const auto last = lanes_.upper_bound({link, kHighest, kHighest});
  bool others = false;
  double behind = 0.0;  // the least finish among the other waiting lanes
  for (auto it = first; it != last; ++it) {
    if (&it->second == &me || !it->second.waiting) continue;
    behind = others ? std::min(behind, it->second.finish) : it->second.finish;
    others = true;
  }
  if (!me.waiting) {
    // Back from idle: start level with the busy lanes, not with the credit of the
    // time it had nothing to send.
    if (others) me.finish = std::max(me.finish, behind);
    me.waiting = true;
  }
  if (others && behind < me.finish) return false;
  me.finish += static_cast<double>(bytes) / share(lane.channel);
  me.granted += bytes;
  return true;
}

void ChannelPacer::idle(int link, StreamKey lane) {
  auto it = lanes_.find({link, lane.peer, lane.channel});
  if (it != lanes_.end()) it->second.waiting = false;
}

std::size_t ChannelPacer::granted(int link, StreamKey lane) const {
  auto it = lanes_.find({link, lane.peer, lane.channel});
  return it == lanes_.end() ? 0 : it->second.granted;
}

}  // namespace blink::transport
