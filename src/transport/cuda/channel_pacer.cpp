#include "transport/cuda/channel_pacer.hpp"

#include <algorithm>

namespace blink::transport {

void ChannelPacer::setShares(std::vector<double> shares) {
  shares_ = std::move(shares);
}

double ChannelPacer::share(int channel) const {
  if (channel < 0 || static_cast<std::size_t>(channel) >= shares_.size()) return 1.0;
  const double s = shares_[static_cast<std::size_t>(channel)];
  return s > 0.0 ? s : 1.0;
}

bool ChannelPacer::mayIssue(int peer, int channel, std::size_t bytes) {
  Lane& me = lanes_[{peer, channel}];
  // The lanes to this peer are adjacent in the map: (peer, any channel).
  const auto first = lanes_.lower_bound({peer, -1 << 30});
  const auto last = lanes_.upper_bound({peer, 1 << 30});
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
  me.finish += static_cast<double>(bytes) / share(channel);
  me.granted += bytes;
  return true;
}

void ChannelPacer::idle(int peer, int channel) {
  auto it = lanes_.find({peer, channel});
  if (it != lanes_.end()) it->second.waiting = false;
}

std::size_t ChannelPacer::granted(int peer, int channel) const {
  auto it = lanes_.find({peer, channel});
  return it == lanes_.end() ? 0 : it->second.granted;
}

}  // namespace blink::transport
