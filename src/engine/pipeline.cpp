// engine/pipeline.cpp — the reorder buffer (engine/pipeline.h).
#include "engine/pipeline.h"

#include <algorithm>

namespace ka {

bool Pipeline::holds(const std::string& hash) const {
  return std::any_of(q_.begin(), q_.end(), [&](const Slot& s) { return s.hash == hash; });
}

Slot& Pipeline::push(Slot s) {
  q_.push_back(std::move(s));
  Slot& back = q_.back();
  if (back.job) waiting_[back.job->order] = &back;
  return back;
}

Slot& Pipeline::judged(const Job& job) {
  Slot& s = *waiting_.at(job.order);
  waiting_.erase(job.order);
  return s;
}

Slot Pipeline::pop() {
  Slot s = std::move(q_.front());
  q_.pop_front();
  return s;
}

}  // namespace ka
