// The named collections (one per account) the addon works on.
#include <algorithm>
#include <thread>

#include "core/index/guarded.h"
#include "core/index/similarity_index.h"

namespace facecheck::index {

IndexResult Registry::create(const std::string& name, size_t dim, bool* created, bool withVectors) {
  *created = false;
  if (name.empty()) return IndexResult::fail(IndexCode::BadArgument, "empty collection name");
  if (dim == 0 || dim > 65536) return IndexResult::fail(IndexCode::BadArgument, "dim must be in 1..65536");
  return guarded([&]() -> IndexResult {
    std::lock_guard<std::mutex> g(mu_);
    auto it = map_.find(name);
    if (it != map_.end()) {
      if (it->second->dim() != dim)
        return IndexResult::fail(IndexCode::DimMismatch, "collection exists with another dimension");
      if (it->second->hasVectors() != withVectors)
        return IndexResult::fail(IndexCode::BadArgument, withVectors ? "collection exists without vectors" : "collection exists with vectors");
      return {};
    }
    map_.emplace(name, std::make_shared<Collection>(dim, withVectors));
    *created = true;
    return {};
  });
}

std::shared_ptr<Collection> Registry::find(const std::string& name) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = map_.find(name);
  return it == map_.end() ? nullptr : it->second;
}

bool Registry::drop(const std::string& name) {
  std::shared_ptr<Collection> victim;
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = map_.find(name);
    if (it == map_.end()) return false;
    victim = std::move(it->second);
    map_.erase(it);
  }
  // Unmapping gigabytes takes a while: let a background thread do it rather than the caller (the
  // event loop). Searches in flight hold their own reference and finish first.
  if (victim.use_count() == 1 && victim->size() >= 65536) {
    try {
      std::thread([v = std::move(victim)]() mutable { v.reset(); }).detach();
    } catch (...) {
      // no thread: freed here
    }
  }
  return true;
}

std::vector<std::string> Registry::names() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<std::string> out;
  out.reserve(map_.size());
  for (const auto& kv : map_) out.push_back(kv.first);
  std::sort(out.begin(), out.end());
  return out;
}

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace facecheck::index
