#pragma once
// A value per key, made once and kept: the planners' questions about a topology (keys start with
// Topology::fingerprint()) that every size of a sweep, every candidate of `auto` and every command
// of the shell would otherwise answer again. Thread-safe; the value is made outside the lock, so
// two threads asking for one new key at once may both make it (the first stored is kept). Entries
// are never removed: references returned stay valid (std::map's nodes do not move).

#include <map>
#include <mutex>
#include <utility>

namespace collkit {

template <class Key, class Value>
class Memo {
 public:
  /// The value for `key`, make() the first time.
  template <class Make>
  const Value& get(const Key& key, Make&& make) {
    {
      std::lock_guard lock(mu_);
      if (auto it = map_.find(key); it != map_.end()) return it->second;
    }
    Value value = std::forward<Make>(make)();
    std::lock_guard lock(mu_);
    return map_.emplace(key, std::move(value)).first->second;
  }

 private:
  std::mutex mu_;
  std::map<Key, Value> map_;
};

}  // namespace collkit
